#include "core/object_table.h"

namespace orb {
namespace {

std::string OwnerOf(const rpc::ObjectRefProto& ref) {
  return ref.owner().ip() + ":" + std::to_string(ref.owner().port());
}

}  // namespace

ObjectTable::ObjectTable(FreeInStore on_free_in_store, BorrowReleased on_borrow_released,
                         size_t max_lineage_bytes)
    : on_free_in_store_(std::move(on_free_in_store)),
      on_borrow_released_(std::move(on_borrow_released)),
      max_lineage_bytes_(max_lineage_bytes) {}

void ObjectTable::AddPending(const ObjectID& id, std::shared_ptr<const rpc::TaskSpec> lineage,
                             std::string not_reconstructable) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[id];
  e.local_refs += 1;
  if (!lineage) {
    e.not_reconstructable = std::move(not_reconstructable);
    return;
  }
  size_t bytes = lineage->ByteSizeLong();
  if (lineage_bytes_ + bytes > max_lineage_bytes_) {
    e.not_reconstructable = "its lineage was not kept: the owner's lineage budget of " +
                            std::to_string(max_lineage_bytes_) + " bytes (ORB_MAX_LINEAGE_BYTES) was full";
    return;
  }
  lineage_bytes_ += bytes;
  e.lineage = std::move(lineage);
  HoldLineageArgs(*e.lineage, +1, nullptr);
}

void ObjectTable::HoldLineageArgs(const rpc::TaskSpec& spec, int delta, Effects* effects) {
  for (const auto& arg : spec.args()) {
    if (!arg.has_ref()) continue;
    auto it = entries_.find(ObjectID::FromBinary(arg.ref().object_id()));
    if (it == entries_.end()) continue;
    it->second.lineage_refs += delta;
    if (delta < 0) MaybeFree(it, effects);
  }
}

void ObjectTable::Complete(Entry& e, ObjectValuePtr value, Effects* effects) {
  e.value = value;
  e.released = false;
  for (auto& cb : e.on_ready) effects->callbacks.push_back([cb = std::move(cb), value] { cb(value); });
  e.on_ready.clear();
  effects->notify_ready = true;
}

void ObjectTable::AddReady(const ObjectID& id, rpc::ObjectValue value, const std::vector<ObjectID>& contained) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[id];
  e.local_refs += 1;
  e.value = std::make_shared<const rpc::ObjectValue>(std::move(value));
  e.contained.insert(e.contained.end(), contained.begin(), contained.end());
  e.not_reconstructable = "it was made by Put, and only a task's result can be rebuilt";
  ready_cv_.notify_all();
}

void ObjectTable::SetReady(const ObjectID& id, rpc::ObjectValue value) {
  ObjectValuePtr ptr = std::make_shared<const rpc::ObjectValue>(std::move(value));
  Effects effects;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<ObjectID> contained;
    for (const auto& ref : ptr->contained_refs()) {
      TakeOverHold(ref);
      contained.push_back(ObjectID::FromBinary(ref.object_id()));
    }
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.value || it->second.released) {
      // Nobody references it any more, or it completed already (a retried task that
      // finished twice; a task re-run for another of its returns): free a store copy the
      // task made, unless it is the copy recorded, and what its value held.
      bool stored = ptr->kind_case() == rpc::ObjectValue::kInStoreNodeId;
      bool recorded = it != entries_.end() && it->second.value &&
                      it->second.value->kind_case() == rpc::ObjectValue::kInStoreNodeId &&
                      it->second.value->in_store_node_id() == ptr->in_store_node_id();
      if (stored && (it == entries_.end() || (it->second.value && !recorded))) {
        effects.freed_in_store.emplace_back(id, ptr->in_store_node_id());
      }
      effects.release.insert(effects.release.end(), contained.begin(), contained.end());
    } else {
      it->second.contained = std::move(contained);
      Complete(it->second, ptr, &effects);
      MaybeFree(it, &effects);
    }
  }
  Apply(std::move(effects));
}

void ObjectTable::TakeOverHold(const rpc::ObjectRefProto& ref) {
  ObjectID id = ObjectID::FromBinary(ref.object_id());
  // Owned here: the worker's registration already added a local reference.
  if (entries_.count(id)) return;
  Borrowed& b = borrowed_[id];
  b.owner = OwnerOf(ref);
  b.holds += 1;
  b.registered += 1;
}

bool ObjectTable::OnFree(const ObjectID& id, std::function<void()> on_free) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  it->second.on_free = std::move(on_free);
  return true;
}

bool ObjectTable::IsOwned(const ObjectID& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(id) > 0;
}

bool ObjectTable::HoldsRefs(const ObjectID& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  return it != entries_.end() && !it->second.contained.empty();
}

ObjectValuePtr ObjectTable::GetIfReady(const ObjectID& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : it->second.value;
}

ObjectTable::WaitOutcome ObjectTable::WaitReady(const std::vector<ObjectID>& ids, size_t num_ready,
                                                std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(mu_);
  auto count = [&](bool* any_unowned) {
    size_t ready = 0;
    for (const auto& id : ids) {
      auto it = entries_.find(id);
      if (it == entries_.end()) {
        *any_unowned = true;
      } else if (it->second.value) {
        ++ready;
      }
    }
    return ready;
  };
  bool assisted = !wait_assist_;
  while (true) {
    bool unowned = false;
    size_t ready = count(&unowned);
    if (unowned) return WaitOutcome::kNotOwned;
    if (ready >= num_ready) return WaitOutcome::kReady;
    if (!assisted) {
      // Once per wait, and briefly: a result that comes another way wakes the cv below.
      assisted = true;
      lock.unlock();
      auto done = [&] {
        std::lock_guard<std::mutex> relock(mu_);
        bool any_unowned = false;
        return count(&any_unowned) >= num_ready || any_unowned;
      };
      wait_assist_(done, std::min(deadline, std::chrono::steady_clock::now() + kAssistFor));
      lock.lock();
      continue;
    }
    if (ready_cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      unowned = false;
      ready = count(&unowned);
      if (unowned) return WaitOutcome::kNotOwned;
      return ready >= num_ready ? WaitOutcome::kReady : WaitOutcome::kTimedOut;
    }
  }
}

bool ObjectTable::OnReady(const ObjectID& id, std::function<void(ObjectValuePtr)> callback) {
  ObjectValuePtr ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return false;
    if (!it->second.value) {
      it->second.on_ready.push_back(std::move(callback));
      return true;
    }
    ready = it->second.value;
  }
  callback(ready);
  return true;
}

bool ObjectTable::MaybeFree(std::unordered_map<ObjectID, Entry>::iterator it, Effects* effects) {
  Entry& e = it->second;
  if (!e.value && !e.released) return false;  // pending
  if (e.local_refs > 0 || e.task_refs > 0 || !e.borrowers.empty()) return false;
  if (e.value) {
    // Nobody can read it any more: its value goes, and what the value held.
    if (e.value->kind_case() == rpc::ObjectValue::kInStoreNodeId) {
      effects->freed_in_store.emplace_back(it->first, e.value->in_store_node_id());
    }
    effects->release.insert(effects->release.end(), e.contained.begin(), e.contained.end());
    e.contained.clear();
    e.value = nullptr;
    e.released = true;
    if (e.on_free) effects->callbacks.push_back(std::move(e.on_free));
  }
  // Still an argument in the lineage of a live object: keep the entry (and its own
  // lineage) so that object can be rebuilt.
  if (e.lineage_refs > 0) return false;
  std::shared_ptr<const rpc::TaskSpec> lineage = std::move(e.lineage);
  entries_.erase(it);
  if (!lineage) return true;
  lineage_bytes_ -= lineage->ByteSizeLong();
  // Its arguments lose a lineage hold, which may free them and their lineage in turn:
  // a worklist rather than recursion, for long chains.
  effects->lineage_dropped.push_back(std::move(lineage));
  if (draining_lineage_) return true;
  draining_lineage_ = true;
  while (!effects->lineage_dropped.empty()) {
    auto spec = std::move(effects->lineage_dropped.back());
    effects->lineage_dropped.pop_back();
    HoldLineageArgs(*spec, -1, effects);
  }
  draining_lineage_ = false;
  return true;
}

bool ObjectTable::MoveInStore(const ObjectID& id, const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || !it->second.value) return false;
  const rpc::ObjectValue& value = *it->second.value;
  if (value.kind_case() != rpc::ObjectValue::kInStoreNodeId || value.in_store_node_id() != from) return false;
  auto moved = std::make_shared<rpc::ObjectValue>(value);
  moved->set_in_store_node_id(to);
  it->second.value = std::move(moved);
  return true;
}

ObjectTable::Recovery ObjectTable::BeginReconstruction(const ObjectID& id, const std::string& lost_node,
                                                       const std::string& reason, const NodeAlive& node_alive) {
  Recovery recovery;
  Effects effects;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return recovery;
    Entry& e = it->second;
    if (!e.value && !e.released) {
      recovery.kind = Recovery::Kind::kInProgress;
    } else if (e.value && (e.value->kind_case() != rpc::ObjectValue::kInStoreNodeId ||
                           e.value->in_store_node_id() != lost_node)) {
      recovery.kind = Recovery::Kind::kNotLost;
    } else {
      std::string what = "object " + id.Hex() + " was lost (" + reason + ")";
      recovery.kind = Reconstruct(id, e, what, node_alive, &recovery, &effects) ? Recovery::Kind::kResubmit
                                                                                : Recovery::Kind::kFailed;
    }
  }
  Apply(std::move(effects));
  return recovery;
}

bool ObjectTable::Reconstruct(const ObjectID& id, Entry& e, const std::string& what_was_lost,
                              const NodeAlive& node_alive, Recovery* recovery, Effects* effects) {
  // The lost value's holds go with it; a re-run brings its own.
  effects->release.insert(effects->release.end(), e.contained.begin(), e.contained.end());
  e.contained.clear();
  std::string why_not;
  if (!e.lineage) {
    why_not = e.not_reconstructable.empty() ? "it was not made by a task that can run again" : e.not_reconstructable;
  } else if (e.lineage->max_retries() >= 0 && e.reconstructions >= e.lineage->max_retries()) {
    why_not = "task '" + e.lineage->function_name() + "' already ran again " + std::to_string(e.reconstructions) +
              " time(s) to rebuild it, its max_retries";
  } else if (const auto& where = e.lineage->scheduling();
             where.strategy() == rpc::SchedulingOptions::NODE_AFFINITY && !where.affinity_soft() &&
             !node_alive(where.affinity_node_id())) {
    why_not = "task '" + e.lineage->function_name() + "' must run on node " +
              NodeID::FromBinary(where.affinity_node_id()).Hex() + " (hard node affinity), which is dead";
  }
  if (!why_not.empty()) {
    rpc::ObjectValue error;
    error.mutable_error()->set_type(rpc::OBJECT_LOST);
    error.mutable_error()->set_message(what_was_lost + " and cannot be rebuilt: " + why_not);
    Complete(e, std::make_shared<const rpc::ObjectValue>(std::move(error)), effects);
    return false;
  }
  e.value = nullptr;
  e.released = false;
  e.reconstructions++;
  rpc::TaskSpec spec = *e.lineage;
  spec.set_attempt(e.reconstructions);
  // Arguments made here that are gone too (let go, or on a dead node) are rebuilt as
  // well; one that cannot be fails the re-run with its error.
  for (const auto& arg : spec.args()) {
    if (!arg.has_ref()) continue;
    ObjectID arg_id = ObjectID::FromBinary(arg.ref().object_id());
    auto it = entries_.find(arg_id);
    if (it == entries_.end()) continue;
    Entry& a = it->second;
    bool on_dead_node = a.value && a.value->kind_case() == rpc::ObjectValue::kInStoreNodeId &&
                        !node_alive(a.value->in_store_node_id());
    if (!a.released && !on_dead_node) continue;
    Reconstruct(arg_id, a,
                "object " + arg_id.Hex() + ", an argument of task '" + spec.function_name() + "' that made " +
                    id.Hex() + ", was lost",
                node_alive, recovery, effects);
  }
  // Dependents before their arguments: a re-run argument then always has a task
  // holding it when it completes (else, held only by lineage, it would be let go).
  recovery->resubmit.insert(recovery->resubmit.begin(), std::move(spec));
  return true;
}

void ObjectTable::MaybeRelease(std::unordered_map<ObjectID, Borrowed>::iterator it, Effects* effects) {
  if (it->second.holds > 0) return;
  if (it->second.registered > 0) effects->borrows_released.push_back({it->second.owner, it->first, it->second.registered});
  borrowed_.erase(it);
}

void ObjectTable::AddHolds(const ObjectID& id, int delta, bool task, Effects* effects) {
  auto owned = entries_.find(id);
  if (owned != entries_.end()) {
    (task ? owned->second.task_refs : owned->second.local_refs) += delta;
    if (delta < 0) MaybeFree(owned, effects);
    return;
  }
  auto borrowed = borrowed_.find(id);
  if (borrowed == borrowed_.end()) return;
  borrowed->second.holds += delta;
  if (delta < 0) MaybeRelease(borrowed, effects);
}

void ObjectTable::Apply(Effects effects) {
  if (effects.notify_ready) ready_cv_.notify_all();
  for (auto& cb : effects.callbacks) cb();
  for (const auto& [id, node] : effects.freed_in_store) on_free_in_store_(id, node);
  if (on_borrow_released_) {
    for (const auto& r : effects.borrows_released) on_borrow_released_(r.owner, r.id, r.holds);
  }
  // Freeing an object drops what its value held, which may free more in turn.
  for (const auto& id : effects.release) RemoveLocalRef(id);
}

void ObjectTable::AddLocalRef(const ObjectID& id) {
  std::lock_guard<std::mutex> lock(mu_);
  AddHolds(id, 1, /*task=*/false, nullptr);
}

void ObjectTable::RemoveLocalRef(const ObjectID& id) {
  Effects effects;
  {
    std::lock_guard<std::mutex> lock(mu_);
    AddHolds(id, -1, /*task=*/false, &effects);
  }
  Apply(std::move(effects));
}

void ObjectTable::AddTaskRef(const ObjectID& id) {
  std::lock_guard<std::mutex> lock(mu_);
  AddHolds(id, 1, /*task=*/true, nullptr);
}

void ObjectTable::RemoveTaskRef(const ObjectID& id) {
  Effects effects;
  {
    std::lock_guard<std::mutex> lock(mu_);
    AddHolds(id, -1, /*task=*/true, &effects);
  }
  Apply(std::move(effects));
}

void ObjectTable::Borrow(const ObjectID& id, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  auto owned = entries_.find(id);
  if (owned != entries_.end()) {
    owned->second.local_refs++;
    return;
  }
  Borrowed& b = borrowed_[id];
  b.owner = owner;
  b.holds++;
  if (b.registered == 0 && !b.queued) {
    b.queued = true;
    b.holds++;  // the registration's own, so the borrow outlives it
    pending_registrations_.push_back(id);
  }
}

std::map<std::string, std::vector<ObjectID>> ObjectTable::TakeRegistrations() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::vector<ObjectID>> by_owner;
  for (const auto& id : pending_registrations_) {
    auto it = borrowed_.find(id);
    if (it != borrowed_.end()) by_owner[it->second.owner].push_back(id);
  }
  pending_registrations_.clear();
  return by_owner;
}

void ObjectTable::FinishRegistration(const std::vector<ObjectID>& ids, bool registered) {
  Effects effects;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& id : ids) {
      auto it = borrowed_.find(id);
      if (it == borrowed_.end()) continue;
      it->second.queued = false;
      if (registered) it->second.registered++;
      it->second.holds--;
      MaybeRelease(it, &effects);
    }
  }
  Apply(std::move(effects));
}

bool ObjectTable::UpdateBorrower(const ObjectID& id, const std::string& borrower, int delta) {
  Effects effects;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return false;
    int& holds = it->second.borrowers[borrower];
    holds += delta;
    if (holds <= 0) it->second.borrowers.erase(borrower);
    if (delta < 0) MaybeFree(it, &effects);
  }
  Apply(std::move(effects));
  return true;
}

size_t ObjectTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

size_t ObjectTable::num_in_scope() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, entry] : entries_) n += !entry.released;
  return n;
}

std::vector<ObjectTable::OwnedSummary> ObjectTable::ListOwned() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::unordered_map<ObjectID, int> captured;  // holds that live objects' values keep
  for (const auto& [id, e] : entries_) {
    for (const auto& c : e.contained) captured[c]++;
  }
  std::vector<OwnedSummary> out;
  out.reserve(entries_.size());
  for (const auto& [id, e] : entries_) {
    OwnedSummary o;
    o.id = id;
    o.value = e.value;
    o.released = e.released;
    o.captured = captured.count(id) ? captured[id] : 0;
    o.local_refs = e.local_refs - o.captured;  // a captured ref is held as a local one
    o.task_refs = e.task_refs;
    for (const auto& [b, n] : e.borrowers) o.borrowers += n;
    o.lineage_refs = e.lineage_refs;
    o.reconstructable = e.lineage != nullptr;
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<ObjectTable::BorrowedSummary> ObjectTable::ListBorrowed() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<BorrowedSummary> out;
  for (const auto& [id, b] : borrowed_) out.push_back({id, b.owner, b.holds});
  return out;
}

size_t ObjectTable::lineage_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lineage_bytes_;
}

size_t ObjectTable::num_borrowed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return borrowed_.size();
}

}  // namespace orb

#include "core/object_table.h"

namespace orb {
namespace {

std::string OwnerOf(const rpc::ObjectRefProto& ref) {
  return ref.owner().ip() + ":" + std::to_string(ref.owner().port());
}

}  // namespace

ObjectTable::ObjectTable(std::function<void(const ObjectID&)> on_free_in_store, BorrowReleased on_borrow_released)
    : on_free_in_store_(std::move(on_free_in_store)), on_borrow_released_(std::move(on_borrow_released)) {}

void ObjectTable::AddPending(const ObjectID& id) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_[id].local_refs += 1;
}

void ObjectTable::AddReady(const ObjectID& id, rpc::ObjectValue value, const std::vector<ObjectID>& contained) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[id];
  e.local_refs += 1;
  e.value = std::make_shared<const rpc::ObjectValue>(std::move(value));
  e.contained.insert(e.contained.end(), contained.begin(), contained.end());
  ready_cv_.notify_all();
}

void ObjectTable::SetReady(const ObjectID& id, rpc::ObjectValue value) {
  std::vector<std::function<void(ObjectValuePtr)>> callbacks;
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
    if (it == entries_.end() || it->second.value) {
      // Nobody references it any more, or it completed already (a retried task that
      // finished twice): free a store copy the task made, and what its value held.
      if (it == entries_.end() && ptr->kind_case() == rpc::ObjectValue::kInStoreNodeId) {
        effects.freed_in_store.push_back(id);
      }
      effects.release.insert(effects.release.end(), contained.begin(), contained.end());
    } else {
      it->second.value = ptr;
      it->second.contained = std::move(contained);
      callbacks.swap(it->second.on_ready);
      MaybeFree(it, &effects);
      ready_cv_.notify_all();
    }
  }
  for (auto& cb : callbacks) cb(ptr);
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
  while (true) {
    bool unowned = false;
    size_t ready = count(&unowned);
    if (unowned) return WaitOutcome::kNotOwned;
    if (ready >= num_ready) return WaitOutcome::kReady;
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
  if (!e.value || e.local_refs > 0 || e.task_refs > 0 || !e.borrowers.empty()) return false;
  if (e.value->kind_case() == rpc::ObjectValue::kInStoreNodeId) effects->freed_in_store.push_back(it->first);
  effects->release.insert(effects->release.end(), e.contained.begin(), e.contained.end());
  entries_.erase(it);
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
  for (const auto& id : effects.freed_in_store) on_free_in_store_(id);
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

size_t ObjectTable::num_borrowed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return borrowed_.size();
}

}  // namespace orb

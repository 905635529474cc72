#include "core/object_table.h"

namespace orb {

ObjectTable::ObjectTable(std::function<void(const ObjectID&)> on_free_in_store)
    : on_free_in_store_(std::move(on_free_in_store)) {}

void ObjectTable::AddPending(const ObjectID& id) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_[id].local_refs += 1;
}

void ObjectTable::AddReady(const ObjectID& id, rpc::ObjectValue value) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[id];
  e.local_refs += 1;
  e.value = std::make_shared<const rpc::ObjectValue>(std::move(value));
  ready_cv_.notify_all();
}

void ObjectTable::SetReady(const ObjectID& id, rpc::ObjectValue value) {
  std::vector<std::function<void(ObjectValuePtr)>> callbacks;
  ObjectValuePtr ptr = std::make_shared<const rpc::ObjectValue>(std::move(value));
  std::vector<ObjectID> freed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) {
      // Nobody references it any more: free a store copy the task made.
      if (ptr->kind_case() == rpc::ObjectValue::kInStoreNodeId) freed.push_back(id);
    } else {
      if (it->second.value) return;  // already completed (a retried task finished twice)
      it->second.value = ptr;
      callbacks.swap(it->second.on_ready);
      MaybeFree(it, &freed);
      ready_cv_.notify_all();
    }
  }
  for (auto& cb : callbacks) cb(ptr);
  NotifyFreed(freed);
}

bool ObjectTable::IsOwned(const ObjectID& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(id) > 0;
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

bool ObjectTable::MaybeFree(std::unordered_map<ObjectID, Entry>::iterator it, std::vector<ObjectID>* freed_in_store) {
  const Entry& e = it->second;
  if (!e.value || e.local_refs > 0 || e.task_refs > 0) return false;
  if (e.value->kind_case() == rpc::ObjectValue::kInStoreNodeId) freed_in_store->push_back(it->first);
  entries_.erase(it);
  return true;
}

void ObjectTable::NotifyFreed(const std::vector<ObjectID>& freed_in_store) {
  for (const auto& id : freed_in_store) on_free_in_store_(id);
}

void ObjectTable::AddLocalRef(const ObjectID& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.local_refs++;
}

void ObjectTable::RemoveLocalRef(const ObjectID& id) {
  std::vector<ObjectID> freed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    it->second.local_refs--;
    MaybeFree(it, &freed);
  }
  NotifyFreed(freed);
}

void ObjectTable::AddTaskRef(const ObjectID& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.task_refs++;
}

void ObjectTable::RemoveTaskRef(const ObjectID& id) {
  std::vector<ObjectID> freed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    it->second.task_refs--;
    MaybeFree(it, &freed);
  }
  NotifyFreed(freed);
}

size_t ObjectTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace orb

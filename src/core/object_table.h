// The objects this process owns: their values (or where they are), and how many
// references keep them alive.
//
// An owned object is *pending* until its task finishes, then *ready* with an
// ObjectValue: inline bytes, "in the object store of node N", or an error. References
// come from ObjectRefs in this process (local) and from pending tasks that take it as
// an argument (task). When both reach zero on a ready object, its entry is dropped and,
// if it lives in the object store, `on_free_in_store` asks the raylet to free it.
//
// Thread-safe: user threads, the submitter's loop and gRPC threads all use it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/id.h"
#include "core/common_types.h"

namespace orb {

using ObjectValuePtr = std::shared_ptr<const rpc::ObjectValue>;

class ObjectTable {
 public:
  explicit ObjectTable(std::function<void(const ObjectID&)> on_free_in_store);

  // A new owned object with one local reference (its first ObjectRef).
  void AddPending(const ObjectID& id);
  void AddReady(const ObjectID& id, rpc::ObjectValue value);
  // Completes a pending object. Dropped at once when nothing references it any more.
  void SetReady(const ObjectID& id, rpc::ObjectValue value);

  bool IsOwned(const ObjectID& id) const;
  // The value if ready; nullptr if pending or not owned.
  ObjectValuePtr GetIfReady(const ObjectID& id) const;

  enum class WaitOutcome { kReady, kTimedOut, kNotOwned };
  // Waits until every id in `ids` that this process owns is ready (at least
  // `num_ready` of them counting all ids) or `deadline`.
  WaitOutcome WaitReady(const std::vector<ObjectID>& ids, size_t num_ready,
                        std::chrono::steady_clock::time_point deadline) const;

  // Calls `callback` once the object is ready (at once if it is). Returns false when
  // the object is not owned here.
  bool OnReady(const ObjectID& id, std::function<void(ObjectValuePtr)> callback);

  void AddLocalRef(const ObjectID& id);
  void RemoveLocalRef(const ObjectID& id);
  void AddTaskRef(const ObjectID& id);
  void RemoveTaskRef(const ObjectID& id);

  size_t size() const;

 private:
  struct Entry {
    ObjectValuePtr value;  // null while pending
    int local_refs = 0;
    int task_refs = 0;
    std::vector<std::function<void(ObjectValuePtr)>> on_ready;
  };
  // REQUIRES: mu_ held. Drops the entry if ready and unreferenced; returns whether it did.
  bool MaybeFree(std::unordered_map<ObjectID, Entry>::iterator it, std::vector<ObjectID>* freed_in_store);
  void NotifyFreed(const std::vector<ObjectID>& freed_in_store);

  std::function<void(const ObjectID&)> on_free_in_store_;
  mutable std::mutex mu_;
  mutable std::condition_variable ready_cv_;
  std::unordered_map<ObjectID, Entry> entries_;  // guarded by mu_
};

}  // namespace orb

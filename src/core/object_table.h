// The objects this process owns and the ones it borrows, with the references that keep
// them alive.
//
// An owned object is *pending* until its task finishes, then *ready* with an
// ObjectValue: inline bytes, "in the object store of node N", or an error. It is held
// by ObjectRefs in this process (local), by pending tasks that take it as an argument
// (task), by other processes that borrow it (borrowers, by address, counted), and by
// live objects whose values contain a ref to it (a local hold each, released when
// that object is freed). When none remain on a ready object, its entry is dropped and,
// if it lives in the object store, `on_free_in_store` asks the raylet to free it.
//
// A borrowed object is owned elsewhere: this process read a ref to it out of a value.
// Its holds are counted the same way; the owner counts this process as a borrower from
// when its registration is done (TakeRegistrations / FinishRegistration, driven by the
// core worker) until the last hold goes, when `on_borrow_released` tells the owner.
// A task's result may carry holds the worker already registered for this process
// (ObjectValue.contained_refs); SetReady takes them over.
//
// Thread-safe: user threads, the submitter's loop and gRPC threads all use it.
// Callbacks run outside the table's lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/id.h"
#include "core/common_types.h"

namespace orb {

using ObjectValuePtr = std::shared_ptr<const rpc::ObjectValue>;

class ObjectTable {
 public:
  // `on_borrow_released(owner, id, holds)`: this process no longer borrows `id`, which
  // its owner counted `holds` times.
  using BorrowReleased = std::function<void(const std::string& owner, const ObjectID& id, int holds)>;
  explicit ObjectTable(std::function<void(const ObjectID&)> on_free_in_store, BorrowReleased on_borrow_released = nullptr);

  // A new owned object with one local reference (its first ObjectRef).
  void AddPending(const ObjectID& id);
  // `contained`: refs inside the value, each already held once (released when it goes).
  void AddReady(const ObjectID& id, rpc::ObjectValue value, const std::vector<ObjectID>& contained = {});
  // Completes a pending object, taking over the holds of value.contained_refs. Dropped
  // at once when nothing references it any more.
  void SetReady(const ObjectID& id, rpc::ObjectValue value);

  bool IsOwned(const ObjectID& id) const;
  // Whether the owned object's value contains ObjectRefs it keeps alive.
  bool HoldsRefs(const ObjectID& id) const;
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

  // Holds on an owned or a borrowed object (no-ops for one this process does not know).
  void AddLocalRef(const ObjectID& id);
  void RemoveLocalRef(const ObjectID& id);
  void AddTaskRef(const ObjectID& id);
  void RemoveTaskRef(const ObjectID& id);

  // --- Borrowing ---
  // A ref read out of a value: one more hold. Owned here: a local reference. Else a
  // borrow of `owner`'s object, queued for registration unless registered already.
  void Borrow(const ObjectID& id, const std::string& owner);
  // The borrows queued for registration, by owner; each stays alive until finished.
  std::map<std::string, std::vector<ObjectID>> TakeRegistrations();
  // The owner answered (registered) or could not (the borrow holds nothing there).
  void FinishRegistration(const std::vector<ObjectID>& ids, bool registered);
  // Owner side: `borrower` holds `delta` more (fewer, if negative) references. False
  // when the object is not owned here.
  bool UpdateBorrower(const ObjectID& id, const std::string& borrower, int delta);

  size_t size() const;           // owned objects
  size_t num_borrowed() const;   // borrowed objects

 private:
  struct Entry {
    ObjectValuePtr value;  // null while pending
    int local_refs = 0;
    int task_refs = 0;
    std::map<std::string, int> borrowers;  // address -> holds
    std::vector<ObjectID> contained;       // held while this object lives
    std::vector<std::function<void(ObjectValuePtr)>> on_ready;
  };
  struct Borrowed {
    std::string owner;
    int holds = 0;        // ObjectRefs, pending tasks, containing objects, a queued registration
    int registered = 0;   // holds the owner counts for this process
    bool queued = false;  // waiting in pending_registrations_
  };
  // What to do once the lock is released: frees in the store, holds to drop, owners to tell.
  struct Effects {
    std::vector<ObjectID> freed_in_store;
    std::vector<ObjectID> release;  // contained holds of freed objects
    struct Released {
      std::string owner;
      ObjectID id;
      int holds;
    };
    std::vector<Released> borrows_released;
  };
  // REQUIRES: mu_ held. Drops the entry if ready and unreferenced; returns whether it did.
  bool MaybeFree(std::unordered_map<ObjectID, Entry>::iterator it, Effects* effects);
  // REQUIRES: mu_ held. Drops a borrow with no holds left.
  void MaybeRelease(std::unordered_map<ObjectID, Borrowed>::iterator it, Effects* effects);
  // REQUIRES: mu_ held. Adds `delta` holds to an owned or borrowed object.
  void AddHolds(const ObjectID& id, int delta, bool task, Effects* effects);
  // REQUIRES: mu_ held. Takes over one hold a worker registered for this process.
  void TakeOverHold(const rpc::ObjectRefProto& ref);
  void Apply(Effects effects);

  std::function<void(const ObjectID&)> on_free_in_store_;
  BorrowReleased on_borrow_released_;
  mutable std::mutex mu_;
  mutable std::condition_variable ready_cv_;
  std::unordered_map<ObjectID, Entry> entries_;      // owned; guarded by mu_
  std::unordered_map<ObjectID, Borrowed> borrowed_;  // guarded by mu_
  std::vector<ObjectID> pending_registrations_;      // guarded by mu_
};

}  // namespace orb

// The objects this process owns and the ones it borrows, with the references that keep
// them alive.
//
// An owned object is *pending* until its task finishes, then *ready* with an
// ObjectValue: inline bytes, "in the object store of node N", or an error. It is held
// by ObjectRefs in this process (local), by pending tasks that take it as an argument
// (task), by other processes that borrow it (borrowers, by address, counted), and by
// live objects whose values contain a ref to it (a local hold each, released when
// that object is freed). When none remain on a ready object, its entry is dropped and,
// if it lives in the object store, `on_free_in_store` asks the raylets to free it (its
// primary copy on the node named, and every copy made of it).
//
// A borrowed object is owned elsewhere: this process read a ref to it out of a value.
// Its holds are counted the same way; the owner counts this process as a borrower from
// when its registration is done (TakeRegistrations / FinishRegistration, driven by the
// core worker) until the last hold goes, when `on_borrow_released` tells the owner.
// A task's result may carry holds the worker already registered for this process
// (ObjectValue.contained_refs); SetReady takes them over.
//
// Lineage: an object made by a retriable task keeps the task's spec, so that when every
// copy is lost the task can be run again (BeginReconstruction). The spec keeps the
// objects it takes as arguments known here too (a lineage hold each): when nothing
// else holds such an argument its value is released (freed in the store) but its entry,
// with its own lineage, stays, so a lost result can be rebuilt through a chain of tasks.
// Lineage costs memory: specs are kept up to `max_lineage_bytes` in all; objects made
// beyond that cannot be rebuilt and say so when lost.
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
  // `on_free_in_store(id, node)`: free object `id`, whose primary copy is at `node` (binary).
  using FreeInStore = std::function<void(const ObjectID& id, const std::string& node)>;
  explicit ObjectTable(FreeInStore on_free_in_store, BorrowReleased on_borrow_released = nullptr,
                       size_t max_lineage_bytes = size_t{1} << 30);

  // A new owned object with one local reference (its first ObjectRef), made by a task.
  // `lineage`: the task's spec when the task may run again to rebuild it (kept within
  // the lineage budget); else `not_reconstructable` says why it cannot.
  void AddPending(const ObjectID& id, std::shared_ptr<const rpc::TaskSpec> lineage = nullptr,
                  std::string not_reconstructable = "");
  // A new owned object made by Put, ready, with one local reference. `contained`: refs
  // inside the value, each already held once (released when it goes).
  void AddReady(const ObjectID& id, rpc::ObjectValue value, const std::vector<ObjectID>& contained = {});
  // Completes a pending object, taking over the holds of value.contained_refs. Dropped
  // at once when nothing references it any more.
  void SetReady(const ObjectID& id, rpc::ObjectValue value);

  bool IsOwned(const ObjectID& id) const;
  // Whether the owned object's value contains ObjectRefs it keeps alive.
  bool HoldsRefs(const ObjectID& id) const;
  // The value if ready; nullptr if pending or not owned.
  ObjectValuePtr GetIfReady(const ObjectID& id) const;

  // Called by a waiting thread instead of sleeping at first: it may do the work that
  // readies the objects itself (read replies, as the call stream's Assist does) until
  // `done()` or `until`; false when it has nothing to do.
  using WaitAssist = std::function<bool(const std::function<bool()>& done, std::chrono::steady_clock::time_point until)>;
  void SetWaitAssist(WaitAssist assist) { wait_assist_ = std::move(assist); }
  enum class WaitOutcome { kReady, kTimedOut, kNotOwned };
  // Waits until every id in `ids` that this process owns is ready (at least
  // `num_ready` of them counting all ids) or `deadline`.
  WaitOutcome WaitReady(const std::vector<ObjectID>& ids, size_t num_ready,
                        std::chrono::steady_clock::time_point deadline) const;

  // Calls `on_free` (once, with no lock held) when the owned object `id` is freed: no
  // ref to it is left in any process. False when it is not owned here.
  bool OnFree(const ObjectID& id, std::function<void()> on_free);

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

  // --- Reconstruction ---
  // Whether a node (binary ID) is alive: its store's copies are readable, and tasks
  // pinned to it can run again.
  using NodeAlive = std::function<bool(const std::string& node_id)>;
  struct Recovery {
    enum class Kind { kResubmit, kInProgress, kFailed, kNotLost, kNotOwned } kind = Kind::kNotOwned;
    // Tasks to submit again, in this order: the tasks that take an argument before the
    // task that makes it (so a rebuilt argument is held by a task when it completes).
    std::vector<rpc::TaskSpec> resubmit;
  };
  // Every copy of owned object `id` in the store of node `lost_node` is gone (`reason`).
  // When its task may run again, the object becomes pending and the tasks that rebuild
  // it, and those of its owned arguments that are gone too (released, or on a node
  // `node_alive` rejects), are returned for submission. Otherwise the object's
  // value becomes an OBJECT_LOST error saying what was lost and why it cannot be
  // rebuilt. kNotLost: the object is no longer where the loss was seen (rebuilt
  // already); kInProgress: it is being rebuilt.
  Recovery BeginReconstruction(const ObjectID& id, const std::string& lost_node, const std::string& reason,
                               const NodeAlive& node_alive);

  // The primary copy of owned object `id` moved from node `from` to node `to` (binary
  // IDs). False, changing nothing, when the object is not owned here any more or its
  // value does not name `from`.
  bool MoveInStore(const ObjectID& id, const std::string& from, const std::string& to);

  // A snapshot for `orb list objects` (ListOwnedObjects).
  struct OwnedSummary {
    ObjectID id;
    ObjectValuePtr value;  // null: pending or released
    bool released = false;
    int local_refs = 0, task_refs = 0, borrowers = 0, captured = 0, lineage_refs = 0;
    bool reconstructable = false;
  };
  struct BorrowedSummary {
    ObjectID id;
    std::string owner;
    int holds = 0;
  };
  std::vector<OwnedSummary> ListOwned() const;
  std::vector<BorrowedSummary> ListBorrowed() const;

  size_t size() const;           // owned objects (released ones kept for lineage included)
  size_t num_in_scope() const;   // owned objects still pending or held (not only by lineage)
  size_t num_borrowed() const;   // borrowed objects
  size_t lineage_bytes() const;  // specs kept for reconstruction

 private:
  struct Entry {
    ObjectValuePtr value;  // null while pending (or released)
    bool released = false;  // only lineage holds it: its value was let go
    int local_refs = 0;
    int task_refs = 0;
    int lineage_refs = 0;  // lineages of live objects that take it as an argument
    std::map<std::string, int> borrowers;  // address -> holds
    std::vector<ObjectID> contained;       // held while this object lives
    std::vector<std::function<void(ObjectValuePtr)>> on_ready;
    std::function<void()> on_free;
    std::shared_ptr<const rpc::TaskSpec> lineage;  // the task that makes it, if it may run again
    std::string not_reconstructable;                // why not, when lineage is null
    int reconstructions = 0;
  };
  struct Borrowed {
    std::string owner;
    int holds = 0;        // ObjectRefs, pending tasks, containing objects, a queued registration
    int registered = 0;   // holds the owner counts for this process
    bool queued = false;  // waiting in pending_registrations_
  };
  // What to do once the lock is released: frees in the store, holds to drop, owners to tell.
  struct Effects {
    std::vector<std::pair<ObjectID, std::string>> freed_in_store;  // with the primary's node
    std::vector<ObjectID> release;  // contained holds of freed objects
    struct Released {
      std::string owner;
      ObjectID id;
      int holds;
    };
    std::vector<Released> borrows_released;
    std::vector<std::function<void()>> callbacks;  // on_ready and on_free callbacks to run
    // An object became ready: wake the Get()s waiting, once the lock is let go (woken
    // under it, a waiter would only block again on the lock).
    bool notify_ready = false;
    std::vector<std::shared_ptr<const rpc::TaskSpec>> lineage_dropped;  // worklist of MaybeFree
  };
  // REQUIRES: mu_ held. Drops the entry if ready and unreferenced (only its value, if
  // lineage still holds it); returns whether the entry went.
  bool MaybeFree(std::unordered_map<ObjectID, Entry>::iterator it, Effects* effects);
  // REQUIRES: mu_ held. Takes (+1) or drops (-1) the lineage holds of `spec` on its
  // owned arguments; dropping may free them, and their lineage in turn.
  void HoldLineageArgs(const rpc::TaskSpec& spec, int delta, Effects* effects);
  // REQUIRES: mu_ held. Sets a pending object's value and collects its waiters.
  void Complete(Entry& e, ObjectValuePtr value, Effects* effects);
  // REQUIRES: mu_ held. Marks `id` (and owned arguments that are gone) for re-running;
  // false when it cannot be (its value is then the error).
  bool Reconstruct(const ObjectID& id, Entry& e, const std::string& what_was_lost, const NodeAlive& node_alive,
                   Recovery* recovery, Effects* effects);
  // REQUIRES: mu_ held. Drops a borrow with no holds left.
  void MaybeRelease(std::unordered_map<ObjectID, Borrowed>::iterator it, Effects* effects);
  // REQUIRES: mu_ held. Adds `delta` holds to an owned or borrowed object.
  void AddHolds(const ObjectID& id, int delta, bool task, Effects* effects);
  // REQUIRES: mu_ held. Takes over one hold a worker registered for this process.
  void TakeOverHold(const rpc::ObjectRefProto& ref);
  void Apply(Effects effects);

  FreeInStore on_free_in_store_;
  BorrowReleased on_borrow_released_;
  size_t max_lineage_bytes_;
  size_t lineage_bytes_ = 0;        // guarded by mu_
  bool draining_lineage_ = false;   // guarded by mu_; MaybeFree's worklist is running
  mutable std::mutex mu_;
  mutable std::condition_variable ready_cv_;
  WaitAssist wait_assist_;  // set before use, then constant
  // How long a wait lets the assist run before it sleeps on ready_cv_.
  static constexpr std::chrono::milliseconds kAssistFor{50};
  std::unordered_map<ObjectID, Entry> entries_;      // owned; guarded by mu_
  std::unordered_map<ObjectID, Borrowed> borrowed_;  // guarded by mu_
  std::vector<ObjectID> pending_registrations_;      // guarded by mu_
};

}  // namespace orb

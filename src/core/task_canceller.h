// orb::Cancel, both halves (Ray's CancelTask).
//
// The owner's half (Cancel): a task still in a queue of this process is taken out and
// fails as TASK_CANCELLED at once; a task pushed to a worker is marked (its end will be
// TASK_CANCELLED, never retried) and the worker is told with a CancelTask call. The
// worker's half (HandleCancelTask): its TaskReceiver skips the task or interrupts it;
// `recursive` cancels the tasks that task submitted from this process (kept here per
// running task, forgotten when it ends); `force` ends the process once the children
// have been told, so the task's owner sees its worker die.
//
// Thread-safe.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/id.h"
#include "common/rpc.h"
#include "core/actor_submitter.h"
#include "core/object_table.h"
#include "core/task_receiver.h"
#include "core/task_submitter.h"
#include "core/worker_client_pool.h"

namespace orb {

class TaskCanceller {
 public:
  struct Parts {
    ObjectTable* objects = nullptr;
    TaskSubmitter* tasks = nullptr;
    ActorSubmitter* actor_calls = nullptr;
    WorkerClientPool* workers = nullptr;
    TaskReceiver* receiver = nullptr;  // null in a driver
    std::function<void()> exit_process;  // force: ends this worker
  };
  explicit TaskCanceller(Parts parts) : parts_(std::move(parts)) {}

  // Cancels the task that returns `id`: here when this process owns it, else by asking
  // its `owner` ("ip:port/worker", empty: not known) to. Throws std::invalid_argument
  // when `id` is not a task result (made by Put, or owned by no one known), or for
  // `force` on an actor call.
  void Cancel(const ObjectID& id, const std::string& owner, bool force, bool recursive);

  // A task that `parent_task_id` (running here) submitted, for recursive cancels.
  void OnSubmitted(const std::string& parent_task_id, const ObjectID& child);
  // The task ended here: its children are no longer its to cancel.
  void OnTaskEnded(const std::string& task_id);

  void HandleCancelTask(const rpc::CancelTaskRequest& req, rpc::CancelTaskReply* reply, SendReply send);
  // A borrower's cancel of a task this process owns.
  void HandleRemoteCancelTask(const rpc::RemoteCancelTaskRequest& req, rpc::RemoteCancelTaskReply* reply, SendReply send);

 private:
  void CancelOwned(const ObjectID& id, bool force, bool recursive);
  // Asks `owner` to cancel the task that returns `id`.
  void AskOwnerToCancel(const ObjectID& id, const std::string& owner, bool force, bool recursive);
  // Cancels the children of `task_id`; `done` runs once each has been told (or failed).
  void CancelChildren(const std::string& task_id, bool force, std::function<void()> done);
  // Tells `worker` to cancel `task_id`; `done` runs when it answered (or failed).
  void TellWorker(const rpc::Address& worker, const std::string& task_id, bool force, bool recursive,
                  std::function<void()> done);

  Parts parts_;
  std::mutex mu_;
  std::unordered_map<std::string, std::vector<ObjectID>> children_;  // guarded by mu_
};

}  // namespace orb

// Submits the tasks this process owns: resolves their ObjectRef arguments, leases
// workers per resource shape and scheduling options (from the local raylet, or from the
// raylet it spills a request to), pushes tasks straight to leased workers in batches,
// records results in the ObjectTable, and retries tasks whose worker died.
//
// Leases are reused while tasks of their shape are queued, kept for `lease_idle` after
// the queue empties (so a loop of blocking calls does not pay for a lease each time),
// then returned. Each lease carries at most `max_batches_in_flight` batches; a batch is
// sized so that queued work spreads over every worker the submitter has or has asked
// for. A SPREAD task gets a lease of its own, returned when it finishes: the next one is
// placed anew, on the next node, however short the tasks are.
//
// While tasks of a shape wait, up to `max_pending_lease_requests` lease requests are out
// at once (so work reaches nodes that join meanwhile: a raylet sends a queued request on
// to a node with room). When the shape's queue empties, the requests still out are
// cancelled (CancelWorkerLease): they start no worker and leave the autoscaler's demand.
//
// Submit() is thread-safe. State is guarded by mu_: a task without ObjectRef arguments
// is enqueued and pushed on the caller's thread; a finished batch is recorded, and its
// lease freed, on the transport thread that delivers the reply; dependency resolution, lease
// replies, failures and timers run on the loop.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common/event_loop.h"
#include "common/id.h"
#include "common/rpc.h"
#include "core/in_flight_tasks.h"
#include "core/object_table.h"
#include "core/task_returns.h"
#include "common/task_pusher.h"
#include "core/worker_client_pool.h"
#include "core_worker_service.grpc.pb.h"
#include "raylet_service.grpc.pb.h"

namespace orb {

class TaskEventBuffer;

struct TaskSubmitterOptions {
  JobID job_id;
  WorkerID worker_id;
  rpc::Address self_address;
  std::chrono::milliseconds lease_idle{200};
  int max_batch = 64;
  int max_batches_in_flight = 1;
  int max_pending_lease_requests = 16;
  size_t max_inline_arg_bytes = 100 * 1024;
  TaskEventBuffer* events = nullptr;  // records each task's steps; null: none
};

class TaskSubmitter {
 public:
  // `raylet` is the local raylet; `raylets` reaches others that leases spill back to;
  // `pusher` sends tasks to leased workers.
  TaskSubmitter(EventLoop* loop, ObjectTable* objects, RpcClient<rpc::RayletService>* raylet,
                RayletClientPool* raylets, TaskPusher* pusher, TaskSubmitterOptions options);

  // Takes one task. Its return object must already be pending in the ObjectTable. The
  // spec is shared, not copied, with whoever else keeps it (the object's lineage) until
  // the task is pushed: a queued task costs one spec.
  void Submit(std::shared_ptr<const rpc::TaskSpec> spec);
  void Submit(rpc::TaskSpec spec) { Submit(std::make_shared<const rpc::TaskSpec>(std::move(spec))); }
  // A result a worker reported before its batch's reply: completes the task if it is
  // one of this submitter's in flight; false otherwise. Thread-safe.
  bool CompleteEarly(rpc::TaskResult result);
  // orb::Cancel of one of this submitter's tasks: a queued task (or one still waiting
  // for its arguments) fails as TASK_CANCELLED and is never pushed; a pushed one is
  // marked, so that its end — an error, its worker killed (force) — is TASK_CANCELLED
  // and never retried, and the caller tells the worker. Thread-safe.
  CancelOutcome Cancel(const std::string& task_id);
  // Returns every lease and stops submitting: nothing queued is sent from now on. Must
  // be called on a thread other than the loop's.
  void Shutdown();

 private:
  struct Lease {
    LeaseID id;
    std::shared_ptr<RpcClient<rpc::RayletService>> raylet;  // the raylet that granted it
    rpc::Address address;
    std::vector<int32_t> gpu_ids;  // CUDA_VISIBLE_DEVICES for its tasks
    google::protobuf::Map<std::string, std::string> gpu_env;  // and the rest of their GPU environment
    int batches_in_flight = 0;
    // Since when it has had nothing to do (valid while idle), and whether its idle timer
    // is set: one timer per lease at a time, re-armed for what is left when it finds the
    // lease used meanwhile, so a loop of blocking calls sets none per call.
    std::chrono::steady_clock::time_point idle_since;
    bool idle_timer_set = false;
    bool used = false;  // has run a batch (a SPREAD lease runs one task, then goes back)
    // A task with max_calls is in flight on it: nothing more goes there until it ends
    // (its worker may end after it).
    bool holds_max_calls_task = false;
  };
  struct ShapeQueue {
    std::map<std::string, double> resources;
    rpc::SchedulingOptions scheduling;
    std::string runtime_env;
    rpc::Language language = rpc::CPP;
    std::deque<std::shared_ptr<const rpc::TaskSpec>> pending;
    // Tasks of a batch whose worker died, not charged for it: pushed alone until one runs.
    std::unordered_set<std::string> suspects;
    std::unordered_map<LeaseID, Lease> leases;
    int lease_requests = 0;
    // Requests out and cancellable: request ID -> the raylet that has it now.
    std::unordered_map<uint64_t, std::shared_ptr<RpcClient<rpc::RayletService>>> outstanding;
    bool spread() const { return scheduling.strategy() == rpc::SchedulingOptions::SPREAD; }
  };

  void ResolveDependencies(std::shared_ptr<const rpc::TaskSpec> spec);
  void Enqueue(std::shared_ptr<const rpc::TaskSpec> spec);
  void Pump(const std::string& shape_key);
  // Asks `raylet` (the local one unless a request was spilled back) for a lease;
  // `request_id` names a request followed to another raylet (0: a new request).
  void RequestLease(const std::string& shape_key, std::shared_ptr<RpcClient<rpc::RayletService>> raylet, bool spilled,
                    uint64_t request_id = 0);
  void OnLeaseReply(const std::string& shape_key, std::shared_ptr<RpcClient<rpc::RayletService>> raylet,
                    uint64_t request_id, const absl::Status& status, rpc::RequestWorkerLeaseReply reply);
  // Cancels the lease requests still out for a shape whose queue is empty.
  void CancelLeaseRequests(ShapeQueue& queue);
  void PushBatch(const std::string& shape_key, Lease& lease, int batch_size);
  // Records every result of a finished batch. Thread-safe (touches only the ObjectTable).
  // A result whose task raised an error its spec retries (retry_exceptions), with
  // retries left: queues the task again (on the loop) instead of completing it.
  bool RetryOnError(const rpc::TaskSpec& spec, const rpc::TaskResult& result);
  void CompleteBatch(const std::vector<rpc::TaskSpec>& batch, rpc::PushTasksReply& reply);
  // Lease bookkeeping after a batch; on failure, returns the lease, then OnWorkerLost.
  // `worker_exiting`: the worker said it ends (max_calls): the lease goes back for good.
  void OnBatchDone(const std::string& shape_key, const LeaseID& lease_id, std::vector<rpc::TaskSpec> batch,
                   const absl::Status& status, bool worker_exiting = false);
  // The worker running `batch` (the tasks without results) ended for `cause`: retries or
  // fails them (as OUT_OF_MEMORY when `type` says it was killed for memory).
  void OnWorkerLost(const std::string& shape_key, std::vector<rpc::TaskSpec> batch, const std::string& cause,
                    rpc::ErrorType type = rpc::WORKER_CRASHED);
  // Raises a task's memory request for its retry after an OOM kill (memory_growth):
  // what it did, in words for the log and the task's events; empty when it did nothing.
  static std::string GrowMemory(rpc::TaskSpec& spec);
  void MaybeReturnIdle(const std::string& shape_key, const LeaseID& lease_id);
  // Returns the lease once it has been idle for lease_idle; `after`: when to look.
  void SetIdleTimer(const std::string& shape_key, Lease& lease, std::chrono::milliseconds after);
  void ReturnLease(const std::shared_ptr<RpcClient<rpc::RayletService>>& raylet, const LeaseID& lease_id,
                   bool worker_failed, bool worker_exiting = false);
  // Complete and Fail are thread-safe.
  // `more`: the values of returns 2..num_returns.
  void Complete(const rpc::TaskSpec& spec, rpc::ObjectValue value, MoreReturnValues more = {});
  void Fail(const rpc::TaskSpec& spec, rpc::ErrorType type, const std::string& message);
  bool IsCancelled(const std::string& task_id);

  EventLoop* loop_;
  ObjectTable* objects_;
  InFlightTasks in_flight_;
  std::shared_ptr<RpcClient<rpc::RayletService>> raylet_;  // this node's (not owned)
  RayletClientPool* raylets_;
  TaskPusher* pusher_;
  TaskSubmitterOptions options_;
  std::mutex mu_;
  std::unordered_map<std::string, ShapeQueue> queues_;  // guarded by mu_
  // Tasks waiting for their arguments, by task ID: a cancel fails them at once.
  std::unordered_map<std::string, std::shared_ptr<const rpc::TaskSpec>> resolving_;  // guarded by mu_
  uint64_t next_request_id_ = 1;                        // guarded by mu_
  bool stopped_ = false;                                // guarded by mu_
  std::mutex cancel_mu_;  // Complete() runs with or without mu_
  std::unordered_set<std::string> cancelled_;  // tasks cancelled while out of a queue; guarded by cancel_mu_
};

}  // namespace orb

// Runs the tasks pushed to this worker, in order, on the thread that calls Run().
//
// PushTasks arrives on a gRPC thread and is queued, or on the worker's call stream
// (common/call_stream_server.h), which Run() itself polls and whose batches it runs at
// once, with no hop between threads. Run() (the worker's main thread) takes each batch,
// resolves arguments, calls the registered function, stores a large result in the
// node's object store, and answers with the results. A task that throws
// answers a TASK_ERROR naming the function and the message; the worker keeps serving.
// While a batch runs long (kEarlyReportAfter since its start or its last report), the
// results finished so far go to the caller at once (report_results, one call at a
// time), so that they are visible before the batch ends and survive a crash later in
// it; the batch's reply, sent once the last report is answered, carries the rest.
// A concurrent actor's batch runs on a pool: a call that finishes while others of its
// batch still run is reported kEarlyReportAfter later (with whatever else finished by
// then) unless the batch has ended, so that a slow call never holds the results of
// quick ones sent with it; its reply carries every result (the caller takes the first).
//
// A call whose argument is the result of an earlier call in the same batch (an actor's
// `a.Task(&C::Add).Remote(r1)` right after the call that makes r1) takes that result
// here, from this process, without asking the owner: the owner learns r1 only from
// this batch's reply, so asking would wait forever.
//
// Actors: an actor creation task runs the registered factory and keeps the instance;
// later tasks for that actor call registered methods on it. With max_concurrency > 1
// they run on a pool of that many threads instead of the main thread; an actor with
// concurrency groups runs each group's calls on a pool of the group's size (the calls
// naming no group on the default pool, max_concurrency threads), so that one group's
// calls never wait for another's. A pool's call may be deferred by its code
// (internal::DeferCurrentCall: a Python async method whose coroutine runs on the actor's
// event loop): its thread goes on to the next call, and the call is answered when it is
// completed; calls in flight, deferred or not, stay within the pool's size (CallGate).
// orb::ExitActor() in a method answers that call with ACTOR_DIED and then ends the actor.
//
// Cancel (orb::Cancel, from the task's owner): a task not started yet is answered
// TASK_CANCELLED without running — a cancel that arrives before its task does is kept
// for it; a running one is interrupted where its language allows (FunctionRegistry::
// Interrupt: Python raises KeyboardInterrupt, an async call's coroutine is cancelled)
// and answered TASK_CANCELLED however it ends. A running actor call is left to finish
// (an actor's state must not be torn mid-call, as in Ray), unless it is an async call.
//
// max_calls (Ray's): once a function has run its max_calls calls here, the batch's reply
// says the worker is exiting (PushTasksReply.worker_exiting), so the owner gives the
// lease back for good; on_retire then ends the process once nothing it owns is needed.
//
// GPUs: a batch carries the GPU indices its lease holds; the worker sets
// CUDA_VISIBLE_DEVICES to them before running it (an actor keeps its creation's).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/call_gate.h"
#include "common/call_stream_server.h"
#include "common/rpc.h"
#include "common/thread_pool.h"
#include "core_worker_service.pb.h"
#include "orb/internal/deferred_call.h"
#include "orb/internal/runtime.h"

namespace orb {

class TaskReceiver {
 public:
  // A batch running longer than this reports the results it has so far.
  static constexpr std::chrono::milliseconds kEarlyReportAfter{10};

  // How the receiver reaches the rest of the core worker.
  struct Hooks {
    // Resolves a by-reference argument to its bytes; throws orb::Error on failure.
    // `known`: its value when this process made it (see above), else null.
    std::function<std::shared_ptr<internal::ValueBuffer>(const rpc::ObjectRefProto&, const rpc::ObjectValue* known)>
        resolve_arg;
    // Stores the task's return `object_id` (binary): inline when small, else in the object
    // store on the caller's behalf. `refs`: ObjectRefs serialized in it, each held once,
    // handed over to the caller.
    std::function<rpc::ObjectValue(const rpc::TaskSpec&, const std::string& object_id, std::string,
                                   const std::vector<internal::RefData>& refs)>
        store_result;
    // Marks which task the current thread runs (empty when done) and the spec whose
    // placement and resources it runs under: its own, or for an actor call its actor's
    // creation (null when done).
    std::function<void(const std::string& task_id, const rpc::TaskSpec* placement)> set_current_task;
    // A task ran here from `start_ns` to `end_ns` (Unix ns); `error`: why it failed, or null.
    std::function<void(const rpc::TaskSpec&, int64_t start_ns, int64_t end_ns, const rpc::ErrorInfo* error)> on_task_ran;
    // This worker now hosts the actor (binary ID); `restarted`: its constructor ran before.
    std::function<void(const std::string& actor_id, bool restarted)> on_actor_created;
    // A method called orb::ExitActor() (`why` says so in the actor's language); its
    // reply has been sent.
    std::function<void(const std::string& actor_id, const std::string& why)> on_actor_exit;
    // Sends results to the caller ahead of the batch's reply; `done(ok)` runs once the
    // caller has recorded them (or the call failed). Null: no early reports.
    std::function<void(const rpc::Address& caller, std::vector<rpc::TaskResult> results,
                       std::function<void(bool ok)> done)>
        report_results;
    // Runs `fn` once after `delay` on another thread (the pool's early reports). Null:
    // a pool's batch reports nothing early.
    std::function<void(std::chrono::milliseconds delay, std::function<void()> fn)> run_after;
    // A task's function reached its max_calls here: the reply that said so is sent, and
    // this worker takes no more tasks; it should end once nothing it owns is referenced.
    std::function<void()> on_retire;
  };

  explicit TaskReceiver(Hooks hooks)
      : hooks_(std::move(hooks)), user_sets_omp_threads_(std::getenv("OMP_NUM_THREADS") != nullptr) {}

  void HandlePushTasks(const rpc::PushTasksRequest& request, rpc::PushTasksReply* reply, SendReply send);
  // Run() also serves `stream` (not owned; set before Run()).
  void ServeCallStream(CallStreamServer* stream) { stream_ = stream; }
  using AnswerBatch = std::function<void(const grpc::Status& status, const rpc::PushTasksReply& reply)>;
  // A batch that arrived on the call stream, on the thread in Run(): runs it now.
  void RunArrived(std::shared_ptr<const rpc::PushTasksRequest> request, AnswerBatch answer);
  // Serves queued batches (and the call stream) until Stop().
  void Run();
  void Stop();
  // orb::Cancel for the task `task_id`: whether it was queued or running here.
  struct CancelResult {
    bool found = false;
    bool running = false;
  };
  CancelResult Cancel(const std::string& task_id);
  // internal::DeferCurrentCall: the pool's call running on this thread, taken over; null
  // when this thread runs none (or it was taken already).
  static std::shared_ptr<internal::DeferredCall> DeferCurrentCall();

 private:
  // The results of one batch as its tasks finish, for later tasks of the batch that take
  // them as arguments. Thread-safe (a concurrent actor's calls run on a pool).
  class BatchResults {
   public:
    explicit BatchResults(const rpc::PushTasksRequest& request);
    // Whether a task in this batch returns `object_id`.
    bool Makes(const std::string& object_id) const;
    void Set(int slot, rpc::TaskResult result);
    // Waits until the task of this batch that returns `object_id` is done: that value.
    // REQUIRES: Makes(object_id).
    const rpc::ObjectValue& Await(const std::string& object_id);
    // Moves the results from slot `from` on into `reply`, in task order. REQUIRES: all set.
    void MoveInto(rpc::PushTasksReply* reply, int from = 0);
    // Copies of the results of slots [from, to). REQUIRES: those are set.
    std::vector<rpc::TaskResult> Copy(int from, int to);
    // Copies of the results of `slots`. REQUIRES: those are set.
    std::vector<rpc::TaskResult> Copy(const std::vector<int>& slots);

   private:
    struct Made {
      int slot;
      int index;  // which of its task's returns (1-based)
    };
    std::unordered_map<std::string, Made> made_;  // by return ID; constant after construction
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<rpc::TaskResult> results_;  // guarded by mu_
    std::vector<bool> done_;                // guarded by mu_
  };
  struct Batch {
    const rpc::PushTasksRequest* request;
    rpc::PushTasksReply* reply;
    SendReply send;
  };
  // Runs a batch: in order on this thread, or on the pool for a concurrent actor.
  void RunBatch(Batch batch);
  // A pool's call that its code deferred (see internal::DeferCurrentCall); made only then.
  class Deferral;
  using CallDone = std::function<void(rpc::TaskResult)>;
  // The pool's call this thread runs now, which its code may defer (set by Run).
  struct DeferrableCall {
    TaskReceiver* receiver;
    const rpc::TaskSpec* spec;
    const CallDone* done;
    int64_t start_ns;
    std::shared_ptr<Deferral> deferral;  // once deferred
  };
  static thread_local DeferrableCall* current_call_;
  // A deferred call's cancel goes to its token from now on.
  void Redirect(const std::string& task_id, uint64_t token);
  rpc::TaskResult Execute(const rpc::TaskSpec& spec, BatchResults* batch) { return *Run(spec, batch, nullptr); }
  // Runs a task: its result, or nothing when its code deferred it (a pool's call, given
  // `done`: the deferral's completion then answers through it).
  std::optional<rpc::TaskResult> Run(const rpc::TaskSpec& spec, BatchResults* batch, const CallDone* done);
  rpc::TaskResult ExecuteOne(const rpc::TaskSpec& spec, BatchResults* batch);
  // The result of a task whose code returned `output` (and returns 2.. in `more`), stored.
  rpc::TaskResult StoreResult(const rpc::TaskSpec& spec, std::string output, std::vector<internal::ReturnData> more,
                              bool retryable, const std::vector<internal::RefData>& refs);
  // Once a task has run (at once, or when its deferred call completes): it is no longer
  // running; a cancel that came meanwhile turns its failure into TASK_CANCELLED; on_task_ran.
  void AfterRun(const rpc::TaskSpec& spec, int64_t start_ns, rpc::TaskResult* result);
  // Runs a batch in order on this thread, reporting results early while it runs long;
  // the slot from which the reply must carry results.
  int RunInOrder(const Batch& batch, BatchResults* results);
  // Runs a batch of actor calls on the pools; answers when all are done.
  void RunOnPool(Batch batch);
  // A pool batch's calls that finished while others of it run, not yet reported.
  struct PoolReports {
    rpc::Address caller;  // copied: the request may be gone before a report is answered
    std::mutex mu;
    std::vector<int> finished;    // slots; guarded by mu
    bool flush_pending = false;   // a FlushPoolReports is scheduled; guarded by mu
    bool in_flight = false;       // a report is on its way; guarded by mu
    bool ended = false;           // the batch's reply went; guarded by mu
  };
  void NoteFinished(const std::shared_ptr<BatchResults>& results, const std::shared_ptr<PoolReports>& reports,
                    int slot);
  void FlushPoolReports(std::shared_ptr<BatchResults> results, std::shared_ptr<PoolReports> reports);
  // The actor's creation: its pools (default group, named groups) and placement.
  void StartActorPools(const rpc::TaskSpec& creation);
  // A concurrency group's threads, and its gate: calls in flight (deferred ones hold no
  // thread) within the group's size.
  struct CallPool {
    // While calls wait and no thread is free, a thread is added once the threads took no
    // call for this long (blocked, not busy): a stream of deferred calls, each quick on its
    // thread, does not start a thread per call.
    static constexpr std::chrono::microseconds kGrowEvery{1000};
    // No thread is added while the gate is full: it would only wait there.
    explicit CallPool(int size) : gate(size), threads(size, kGrowEvery, [this] { return gate.HasRoom(); }) {}
    CallGate gate;  // outlives the threads' last calls
    ThreadPool threads;
  };
  // The pool an actor call runs on: its concurrency group's, else the default group's.
  CallPool* PoolFor(const rpc::TaskSpec& call);
  // The spec whose placement and resources `spec` runs under: its own, or for an actor
  // call its actor's creation.
  const rpc::TaskSpec& PlacementOf(const rpc::TaskSpec& spec) const;
  // Whether a cancel came for the task; takes it (each cancel answers one run).
  bool TakeCancel(const std::string& task_id);
  // The environment of the batch's lease: CUDA_VISIBLE_DEVICES = its GPUs (unset when it
  // holds none) and the rest of its GPU environment; OMP_NUM_THREADS = its CPUs (at least
  // 1, as Ray sets it) unless the worker was started with one.
  void SetLeaseEnv(const rpc::PushTasksRequest& request);

  Hooks hooks_;
  CallStreamServer* stream_ = nullptr;
  std::shared_ptr<void> actor_;  // the actor instance this worker hosts, if any
  std::string actor_id_;
  // The default concurrency group's pool: with max_concurrency > 1 or named groups.
  std::unique_ptr<CallPool> actor_pool_;
  std::unordered_map<std::string, std::unique_ptr<CallPool>> group_pools_;  // named groups
  rpc::TaskSpec actor_creation_;  // its calls run under its placement and resources
  std::atomic<bool> exit_requested_{false};
  // max_calls: calls run per function name (normal tasks run on one thread, in order);
  // retiring_ once one reached its limit, retire_announced_ once a reply said so.
  std::unordered_map<std::string, int> calls_of_;
  bool retiring_ = false;
  bool retire_announced_ = false;
  std::atomic<bool> actor_exited_{false};  // a call ran orb::ExitActor(): later calls fail
  bool set_visible_gpus_ = false;
  std::vector<std::string> gpu_env_set_;  // the names SetLeaseEnv set from gpu_env
  bool user_sets_omp_threads_;            // OMP_NUM_THREADS was in the worker's environment
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;  // guarded by mu_
  bool stopped_ = false;     // guarded by mu_
  // Cancels: tasks running now (task ID -> its thread, or a deferred call's token;
  // whether an actor call), and the cancels not yet taken by a run (the oldest forgotten
  // past kMaxEarlyCancels: those of tasks that had finished when their cancel came).
  struct Running {
    uint64_t thread = 0;
    bool actor_call = false;
  };
  static constexpr size_t kMaxEarlyCancels = 1024;
  std::mutex cancel_mu_;
  std::unordered_map<std::string, Running> running_;  // guarded by cancel_mu_
  std::unordered_set<std::string> cancels_;           // guarded by cancel_mu_
  std::deque<std::string> cancel_order_;              // guarded by cancel_mu_
};

}  // namespace orb

#include "core/task_receiver.h"

#include <algorithm>

#include <pthread.h>

#include <cstdlib>
#include <optional>

#include "common/unix_time.h"
#include "core/exception_names.h"
#include "core/task_returns.h"
#include "orb/internal/deferred_call.h"
#include "orb/internal/function_registry.h"

namespace orb {
namespace {

class InlineArg : public internal::ValueBuffer {
 public:
  explicit InlineArg(const std::string* bytes) : bytes_(bytes) {}
  const char* data() const override { return bytes_->data(); }
  size_t size() const override { return bytes_->size(); }

 private:
  const std::string* bytes_;  // owned by the request, which outlives the call
};

// A result that is one error, standing for every return of `spec`.
rpc::TaskResult FailedResult(const rpc::TaskSpec& spec, rpc::ErrorType type, const std::string& message) {
  rpc::TaskResult result;
  result.set_task_id(spec.task_id());
  result.set_return_id(spec.return_id());
  result.mutable_value()->mutable_error()->set_type(type);
  result.mutable_value()->mutable_error()->set_message(message);
  return result;
}

// How an actor's code ends the actor, in the language of `spec` (one of its calls).
std::string ExitCall(const rpc::TaskSpec& spec) {
  return spec.language() == rpc::PYTHON ? "orb.actor.exit_actor()" : "orb::ExitActor()";
}

std::string IntendedExitMessage(const rpc::TaskSpec& spec) {
  return "the actor exited on purpose (INTENDED_USER_EXIT): " + spec.function_name() + " called " + ExitCall(spec);
}

}  // namespace

// A pool's call, which its code may take over (internal::DeferCurrentCall) and complete
// later from any thread. Answered once: by the thread that ran it when its code did not
// defer it (or failed after deferring it), else by the first completion — after that
// thread has handed the call off, so that the answer never races the call's own start.
class TaskReceiver::Deferral : public internal::DeferredCall {
 public:
  Deferral(TaskReceiver* receiver, const rpc::TaskSpec* spec, CallDone done, int64_t start_ns)
      : receiver_(receiver), spec_(spec), done_(std::move(done)), token_(next_token_++), start_ns_(start_ns) {
    receiver_->Redirect(spec_->task_id(), token_);  // a cancel now reaches the call by its token
  }

  uint64_t token() const override { return token_; }
  void Complete(std::string output, std::vector<internal::RefData> refs) override {
    Finish(receiver_->StoreResult(*spec_, std::move(output), {}, false, refs));
  }
  void CompleteWithActorExit() override {
    receiver_->actor_exited_ = true;
    receiver_->exit_requested_ = true;
    Finish(FailedResult(*spec_, rpc::ACTOR_DIED, IntendedExitMessage(*spec_)));
  }
  void Fail(const std::string& message) override {
    Finish(FailedResult(*spec_, rpc::TASK_ERROR, spec_->function_name() + ": " + message));
  }

  // On the thread that ran the call. Its code returned after deferring it: the
  // completion answers it.
  void HandOff() {
    std::optional<rpc::TaskResult> early;
    {
      std::lock_guard<std::mutex> lock(mu_);
      handed_off_ = true;
      early = std::move(early_);
    }
    if (early) Answer(std::move(*early));
  }
  // The running thread answers the call itself: a completion later is ignored.
  void Abandon() {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
  }

 private:
  void Finish(rpc::TaskResult result) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_) return;
      finished_ = true;
      if (!handed_off_) {
        early_ = std::move(result);
        return;
      }
    }
    Answer(std::move(result));
  }
  void Answer(rpc::TaskResult result) {
    receiver_->AfterRun(*spec_, start_ns_, &result);
    CallDone done = std::move(done_);
    done(std::move(result));
  }

  static inline std::atomic<uint64_t> next_token_{1};  // thread IDs are addresses: never this small
  TaskReceiver* receiver_;
  const rpc::TaskSpec* spec_;  // the batch's, which `done_` keeps alive
  CallDone done_;
  const uint64_t token_;
  const int64_t start_ns_;
  std::mutex mu_;
  bool handed_off_ = false;             // guarded by mu_
  bool finished_ = false;               // guarded by mu_
  std::optional<rpc::TaskResult> early_;  // completed before the hand-off; guarded by mu_
};

thread_local TaskReceiver::DeferrableCall* TaskReceiver::current_call_ = nullptr;

std::shared_ptr<internal::DeferredCall> TaskReceiver::DeferCurrentCall() {
  DeferrableCall* call = current_call_;
  if (!call || call->deferral) return nullptr;
  call->deferral = std::make_shared<Deferral>(call->receiver, call->spec, *call->done, call->start_ns);
  return call->deferral;
}

void TaskReceiver::Redirect(const std::string& task_id, uint64_t token) {
  std::lock_guard<std::mutex> lock(cancel_mu_);
  auto running = running_.find(task_id);
  if (running != running_.end()) running->second.thread = token;
}

void TaskReceiver::HandlePushTasks(const rpc::PushTasksRequest& request, rpc::PushTasksReply* reply,
                                   SendReply send) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return send(grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker is exiting"));
  queue_.push_back(Batch{&request, reply, std::move(send)});
  cv_.notify_one();
  if (stream_) stream_->Wake();
}

void TaskReceiver::RunArrived(std::shared_ptr<const rpc::PushTasksRequest> request, AnswerBatch answer) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return answer(grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker is exiting"), {});
  }
  auto reply = std::make_shared<rpc::PushTasksReply>();
  const rpc::PushTasksRequest* view = request.get();
  RunBatch(Batch{view, reply.get(), [request = std::move(request), reply, answer = std::move(answer)](grpc::Status status) {
                   answer(status, *reply);
                 }});
}

void TaskReceiver::Run() {
  while (true) {
    std::optional<Batch> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!stream_) cv_.wait(lock, [this] { return stopped_ || !queue_.empty(); });
      if (stopped_ && queue_.empty()) return;
      if (!queue_.empty()) {
        batch = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    if (batch) {
      RunBatch(std::move(*batch));
    } else {
      stream_->PollOnce(-1);  // runs what arrives; returns early on Wake()
    }
  }
}

void TaskReceiver::RunBatch(Batch batch) {
  SetLeaseEnv(*batch.request);
  bool actor_calls = actor_pool_ && batch.request->tasks_size() > 0 && !batch.request->tasks(0).actor_id().empty();
  if (actor_calls) return RunOnPool(std::move(batch));
  BatchResults results(*batch.request);
  int unreported = RunInOrder(batch, &results);
  results.MoveInto(batch.reply, unreported);
  bool retiring = retiring_ && !retire_announced_;
  if (retiring) {
    retire_announced_ = true;
    batch.reply->set_worker_exiting(true);
  }
  batch.send(grpc::Status::OK);
  if (exit_requested_.exchange(false)) hooks_.on_actor_exit(actor_id_, "exited by " + ExitCall(batch.request->tasks(0)));
  if (retiring && hooks_.on_retire) hooks_.on_retire();
}

int TaskReceiver::RunInOrder(const Batch& batch, BatchResults* results) {
  const int n = batch.request->tasks_size();
  struct Reports {
    std::mutex mu;
    std::condition_variable cv;
    bool in_flight = false;  // guarded by mu
    int confirmed = 0;       // results [0, confirmed) reached the caller; guarded by mu
    bool failed = false;     // a report failed: the reply carries the rest; guarded by mu
  };
  auto reports = std::make_shared<Reports>();
  auto since = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    results->Set(i, Execute(batch.request->tasks(i), results));
    if (i + 1 == n || !hooks_.report_results) continue;
    auto now = std::chrono::steady_clock::now();
    if (now - since < kEarlyReportAfter) continue;
    int from;
    {
      std::lock_guard<std::mutex> lock(reports->mu);
      if (reports->in_flight || reports->failed) continue;
      reports->in_flight = true;
      from = reports->confirmed;
    }
    since = now;
    int to = i + 1;
    hooks_.report_results(batch.request->tasks(0).caller(), results->Copy(from, to), [reports, to](bool ok) {
      std::lock_guard<std::mutex> lock(reports->mu);
      reports->in_flight = false;
      if (ok) {
        reports->confirmed = to;
      } else {
        reports->failed = true;
      }
      reports->cv.notify_all();
    });
  }
  // The reply goes after the last report is answered, so the caller records reported
  // results before it reads the reply.
  std::unique_lock<std::mutex> lock(reports->mu);
  reports->cv.wait(lock, [&] { return !reports->in_flight; });
  return reports->confirmed;
}

void TaskReceiver::SetLeaseEnv(const rpc::PushTasksRequest& request) {
  // An actor's calls run under its creation's lease: they leave the setting alone.
  if (request.tasks_size() > 0 && !request.tasks(0).actor_id().empty()) return;
  if (!user_sets_omp_threads_ && request.tasks_size() > 0) {
    double cpus = 0;  // a batch's tasks share one lease shape
    for (const auto& [name, amount] : request.tasks(0).resources()) {
      if (name == "CPU" || name.rfind("CPU_group_", 0) == 0) cpus = std::max(cpus, amount);
    }
    ::setenv("OMP_NUM_THREADS", std::to_string(std::max(1, static_cast<int>(cpus))).c_str(), 1);
  }
  // The rest of the lease's GPU environment (an MPS share); what the last lease set and
  // this one does not, goes.
  for (const std::string& name : gpu_env_set_) {
    if (!request.gpu_env().count(name)) ::unsetenv(name.c_str());
  }
  gpu_env_set_.clear();
  for (const auto& [name, value] : request.gpu_env()) {
    ::setenv(name.c_str(), value.c_str(), 1);
    gpu_env_set_.push_back(name);
  }
  if (request.gpu_ids_size() == 0) {
    if (set_visible_gpus_) ::unsetenv("CUDA_VISIBLE_DEVICES");
    set_visible_gpus_ = false;
    return;
  }
  std::string ids;
  for (int32_t gpu : request.gpu_ids()) ids += (ids.empty() ? "" : ",") + std::to_string(gpu);
  ::setenv("CUDA_VISIBLE_DEVICES", ids.c_str(), 1);
  set_visible_gpus_ = true;
}

void TaskReceiver::StartActorPools(const rpc::TaskSpec& creation) {
  actor_creation_ = creation;
  actor_creation_.clear_args();  // only its placement and resources are kept
  const auto& groups = creation.actor_creation().concurrency_groups();
  int threads = creation.actor_creation().max_concurrency();
  // With groups, the default group's calls go to a pool too (of one thread: in order).
  if ((threads > 1 || !groups.empty()) && !actor_pool_) actor_pool_ = std::make_unique<CallPool>(threads);
  for (const auto& [name, size] : groups) {
    if (!group_pools_.count(name)) group_pools_[name] = std::make_unique<CallPool>(size);
  }
}

const rpc::TaskSpec& TaskReceiver::PlacementOf(const rpc::TaskSpec& spec) const {
  return spec.actor_id().empty() ? spec : actor_creation_;
}

TaskReceiver::CallPool* TaskReceiver::PoolFor(const rpc::TaskSpec& call) {
  auto group = group_pools_.find(call.concurrency_group());
  return group == group_pools_.end() ? actor_pool_.get() : group->second.get();  // unknown: Execute fails it
}

void TaskReceiver::RunOnPool(Batch batch) {
  int n = batch.request->tasks_size();
  auto remaining = std::make_shared<std::atomic<int>>(n);
  auto shared = std::make_shared<Batch>(std::move(batch));
  auto results = std::make_shared<BatchResults>(*shared->request);
  auto reports = std::make_shared<PoolReports>();
  if (n > 0) reports->caller = shared->request->tasks(0).caller();
  bool report_early = n > 1 && hooks_.report_results && hooks_.run_after;
  // Posted in order, so a call that waits for an earlier one's result never waits for
  // a call that has not been taken by a thread.
  for (int i = 0; i < n; ++i) {
    CallPool* pool = PoolFor(shared->request->tasks(i));
    pool->threads.Post([this, shared, results, reports, remaining, report_early, i, pool] {
      pool->gate.Enter();
      const CallDone done = [this, shared, results, reports, remaining, report_early, i, pool](rpc::TaskResult result) {
        pool->gate.Leave();
        results->Set(i, std::move(result));
        if (remaining->fetch_sub(1) != 1) {
          if (report_early) NoteFinished(results, reports, i);
          return;
        }
        {
          std::lock_guard<std::mutex> lock(reports->mu);
          reports->ended = true;
        }
        results->MoveInto(shared->reply);
        shared->send(grpc::Status::OK);
        if (exit_requested_.exchange(false)) {
          hooks_.on_actor_exit(actor_id_, "exited by " + ExitCall(shared->request->tasks(i)));
        }
      };
      if (std::optional<rpc::TaskResult> result = Run(shared->request->tasks(i), results.get(), &done)) {
        done(std::move(*result));
      }
    });
  }
}

void TaskReceiver::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    cv_.notify_all();
  }
  if (stream_) stream_->Wake();
}

void TaskReceiver::NoteFinished(const std::shared_ptr<BatchResults>& results,
                                const std::shared_ptr<PoolReports>& reports, int slot) {
  {
    std::lock_guard<std::mutex> lock(reports->mu);
    if (reports->ended) return;
    reports->finished.push_back(slot);
    if (reports->flush_pending || reports->in_flight) return;  // a flush or an answer takes it
    reports->flush_pending = true;
  }
  hooks_.run_after(kEarlyReportAfter, [this, results, reports] { FlushPoolReports(results, reports); });
}

void TaskReceiver::FlushPoolReports(std::shared_ptr<BatchResults> results, std::shared_ptr<PoolReports> reports) {
  std::vector<int> slots;
  {
    std::lock_guard<std::mutex> lock(reports->mu);
    reports->flush_pending = false;
    if (reports->ended || reports->finished.empty()) return;
    slots.swap(reports->finished);
    reports->in_flight = true;
  }
  hooks_.report_results(reports->caller, results->Copy(slots), [this, results, reports](bool) {
    {
      std::lock_guard<std::mutex> lock(reports->mu);
      reports->in_flight = false;
      if (reports->ended || reports->finished.empty()) return;
      reports->flush_pending = true;
    }
    hooks_.run_after(kEarlyReportAfter, [this, results, reports] { FlushPoolReports(results, reports); });
  });
}

TaskReceiver::BatchResults::BatchResults(const rpc::PushTasksRequest& request)
    : results_(request.tasks_size()), done_(request.tasks_size(), false) {
  for (int i = 0; i < request.tasks_size(); ++i) {
    std::vector<ObjectID> returns = ReturnIds(request.tasks(i));
    for (size_t r = 0; r < returns.size(); ++r) made_[returns[r].Binary()] = Made{i, static_cast<int>(r) + 1};
  }
}

bool TaskReceiver::BatchResults::Makes(const std::string& object_id) const { return made_.count(object_id) > 0; }

void TaskReceiver::BatchResults::Set(int slot, rpc::TaskResult result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    results_[slot] = std::move(result);
    done_[slot] = true;
  }
  cv_.notify_all();
}

const rpc::ObjectValue& TaskReceiver::BatchResults::Await(const std::string& object_id) {
  Made made = made_.at(object_id);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_[made.slot]; });
  const rpc::TaskResult& result = results_[made.slot];  // never changes once set
  // A failed task's one error stands for every return.
  if (made.index == 1 || made.index - 2 >= result.more_values_size()) return result.value();
  return result.more_values(made.index - 2);
}

void TaskReceiver::BatchResults::MoveInto(rpc::PushTasksReply* reply, int from) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = from; i < results_.size(); ++i) *reply->add_results() = std::move(results_[i]);
}

std::vector<rpc::TaskResult> TaskReceiver::BatchResults::Copy(int from, int to) {
  std::lock_guard<std::mutex> lock(mu_);
  return std::vector<rpc::TaskResult>(results_.begin() + from, results_.begin() + to);
}

std::vector<rpc::TaskResult> TaskReceiver::BatchResults::Copy(const std::vector<int>& slots) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<rpc::TaskResult> out;
  out.reserve(slots.size());
  for (int slot : slots) out.push_back(results_[slot]);
  return out;
}

TaskReceiver::CancelResult TaskReceiver::Cancel(const std::string& task_id) {
  CancelResult out;
  {
    std::lock_guard<std::mutex> lock(cancel_mu_);
    auto running = running_.find(task_id);
    if (running != running_.end()) {
      out.found = out.running = true;
      // Under cancel_mu_: the task cannot end (and another start) on that thread meanwhile.
      bool interrupted = internal::FunctionRegistry::Instance().Interrupt(running->second.thread, running->second.actor_call);
      // A running actor call that was not interrupted (not async) runs on: the actor's
      // state must not be torn mid-call.
      if ((interrupted || !running->second.actor_call) && cancels_.insert(task_id).second) cancel_order_.push_back(task_id);
      return out;
    }
    if (cancels_.insert(task_id).second) cancel_order_.push_back(task_id);
    while (cancel_order_.size() > kMaxEarlyCancels) {
      cancels_.erase(cancel_order_.front());
      cancel_order_.pop_front();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const Batch& batch : queue_) {
    for (const auto& spec : batch.request->tasks()) out.found |= spec.task_id() == task_id;
  }
  return out;
}

bool TaskReceiver::TakeCancel(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(cancel_mu_);
  return !cancels_.empty() && cancels_.erase(task_id) > 0;
}

std::optional<rpc::TaskResult> TaskReceiver::Run(const rpc::TaskSpec& spec, BatchResults* batch, const CallDone* done) {
  int64_t start_ns = UnixNanos();
  if (TakeCancel(spec.task_id())) {
    rpc::TaskResult result = FailedResult(spec, rpc::TASK_CANCELLED, "task '" + spec.function_name() + "' was cancelled before it ran");
    if (hooks_.on_task_ran) hooks_.on_task_ran(spec, start_ns, UnixNanos(), &result.value().error());
    return result;
  }
  {
    std::lock_guard<std::mutex> lock(cancel_mu_);
    running_[spec.task_id()] = Running{static_cast<uint64_t>(pthread_self()), !spec.actor_id().empty()};
  }
  DeferrableCall call{this, &spec, done, start_ns, nullptr};
  if (done) current_call_ = &call;
  rpc::TaskResult result = ExecuteOne(spec, batch);
  current_call_ = nullptr;
  if (call.deferral && result.task_id().empty()) {  // deferred: its completion answers
    call.deferral->HandOff();
    return std::nullopt;
  }
  if (call.deferral) call.deferral->Abandon();
  AfterRun(spec, start_ns, &result);
  return result;
}

void TaskReceiver::AfterRun(const rpc::TaskSpec& spec, int64_t start_ns, rpc::TaskResult* out) {
  rpc::TaskResult& result = *out;
  {
    std::lock_guard<std::mutex> lock(cancel_mu_);
    running_.erase(spec.task_id());
  }
  if (spec.max_calls() > 0 && spec.actor_id().empty() && ++calls_of_[spec.function_name()] >= spec.max_calls()) {
    retiring_ = true;  // its last call: the batch's reply says so
  }
  if (TakeCancel(spec.task_id()) && result.value().has_error()) {
    // Cancelled while it ran, and it failed (interrupted): it ended cancelled. One that
    // finished anyway keeps its result (its bytes may already be in the store).
    std::string was = result.value().error().message();
    result.mutable_value()->mutable_error()->set_type(rpc::TASK_CANCELLED);
    result.mutable_value()->mutable_error()->set_message("task '" + spec.function_name() + "' was cancelled while it ran: " + was);
  }
  if (hooks_.on_task_ran) {
    const rpc::ObjectValue& value = result.value();
    hooks_.on_task_ran(spec, start_ns, UnixNanos(), value.has_error() ? &value.error() : nullptr);
  }
}

rpc::TaskResult TaskReceiver::ExecuteOne(const rpc::TaskSpec& spec, BatchResults* batch) {
  auto fail = [&](rpc::ErrorType type, const std::string& message) {
    internal::ClearSerializedRefs();  // a failed task returns no refs
    return FailedResult(spec, type, message);
  };
  using Args = std::vector<std::shared_ptr<internal::ValueBuffer>>;
  const auto& registry = internal::FunctionRegistry::Instance();
  std::function<std::string(const Args&)> call;
  std::string what = "function";
  if (spec.has_actor_creation()) {
    what = "actor factory";
    if (const internal::ActorFactory* factory = registry.FindFactory(spec.function_name())) {
      call = [this, factory, &spec](const Args& args) {
        // The constructor already runs as the actor: GetActorId() and
        // WasCurrentActorRestarted() answer there (a restarted actor restores its state).
        actor_id_ = spec.actor_creation().actor_id();
        hooks_.on_actor_created(actor_id_, spec.actor_creation().restarted());
        actor_ = (*factory)(args);
        StartActorPools(spec);
        return internal::Serialize(msgpack::type::nil_t());
      };
    }
  } else if (!spec.actor_id().empty()) {
    what = "actor method";
    if (!actor_ || spec.actor_id() != actor_id_) {
      return fail(rpc::ACTOR_DIED, "this worker does not host the actor that " + spec.function_name() + " was sent to");
    }
    if (actor_exited_) {
      return fail(rpc::ACTOR_DIED, "the actor exited (a call ran " + ExitCall(spec) + ") before " + spec.function_name() + " ran");
    }
    if (!spec.concurrency_group().empty() && !group_pools_.count(spec.concurrency_group())) {
      std::string groups;
      for (const auto& [name, pool] : group_pools_) groups += (groups.empty() ? "" : ", ") + name;
      return fail(rpc::TASK_ERROR, spec.function_name() + ": the actor has no concurrency group '" +
                                       spec.concurrency_group() + "' (" +
                                       (groups.empty() ? "it has none" : "its groups: " + groups) + ")");
    }
    if (const internal::ActorMethod* method = registry.FindMethod(spec.function_name())) {
      call = [this, method](const Args& args) { return (*method)(actor_.get(), args); };
    }
  } else if (const internal::Invoker* invoker = registry.Find(spec.function_name())) {
    call = [invoker](const Args& args) { return (*invoker)(args); };
  }
  if (!call) {
    return fail(rpc::FUNCTION_NOT_FOUND, what + " '" + spec.function_name() +
                                             "' is not registered in the worker (is ORB_REMOTE(" +
                                             spec.function_name() + ") linked into the worker's code?)");
  }
  hooks_.set_current_task(spec.task_id(), &PlacementOf(spec));
  std::string output;
  std::vector<internal::ReturnData> more;  // returns 2..num_returns
  bool retryable = false;                  // the code raised an error its spec retries
  // A C++ exception out of the task's code (or a Python executor's own failure) is retried
  // under retry_exceptions unless an allowlist (Python's) has to say so.
  auto raised = [&](const std::string& message) {
    rpc::TaskResult failed = fail(rpc::TASK_ERROR, message);
    failed.set_retryable_error(spec.retry_exceptions() && spec.retry_exception_allowlist().empty());
    return failed;
  };
  try {
    std::vector<std::shared_ptr<internal::ValueBuffer>> args;
    args.reserve(spec.args_size());
    for (const auto& arg : spec.args()) {
      if (arg.has_ref()) {
        // Made by an earlier task of this batch: only this process has it yet. (A
        // later task of the batch can never be an argument: it is not submitted yet.)
        const std::string& id = arg.ref().object_id();
        args.push_back(hooks_.resolve_arg(arg.ref(), batch->Makes(id) ? &batch->Await(id) : nullptr));
      } else {
        args.push_back(std::make_shared<InlineArg>(&arg.value()));
      }
    }
    ReturnsScope returns(spec);
    output = call(args);
    if (output.empty() && current_call_ && current_call_->deferral) {  // its completion makes the result
      hooks_.set_current_task("", nullptr);
      return rpc::TaskResult();
    }
    more = returns.TakeMore();
    retryable = returns.retryable_error();
  } catch (const internal::ActorExitSignal&) {
    hooks_.set_current_task("", nullptr);
    actor_exited_ = true;
    exit_requested_ = true;
    return fail(rpc::ACTOR_DIED, IntendedExitMessage(spec));
  } catch (const internal::ArgumentError& e) {
    hooks_.set_current_task("", nullptr);
    return fail(rpc::BAD_ARGUMENT, spec.function_name() + ": " + e.what());
  } catch (const orb::OwnerDiedError& e) {
    hooks_.set_current_task("", nullptr);
    return fail(rpc::OWNER_DIED, spec.function_name() + ": " + e.what());
  } catch (const orb::ObjectLostError& e) {
    // An argument (or an object the task read) is gone for good: the caller sees the loss.
    hooks_.set_current_task("", nullptr);
    return fail(rpc::OBJECT_LOST, spec.function_name() + ": " + e.what());
  } catch (const orb::Error& e) {
    // An orb failure inside the task (a Get of a failed object...): its own message.
    hooks_.set_current_task("", nullptr);
    return raised(spec.function_name() + ": " + e.what());
  } catch (const std::exception& e) {
    hooks_.set_current_task("", nullptr);
    return raised(spec.function_name() + ": " + ExceptionTypeName(e) + ": " + e.what());
  } catch (...) {
    hooks_.set_current_task("", nullptr);
    return raised(spec.function_name() + ": threw a non-standard exception");
  }
  hooks_.set_current_task("", nullptr);
  return StoreResult(spec, std::move(output), std::move(more), retryable, internal::TakeSerializedRefs());
}

rpc::TaskResult TaskReceiver::StoreResult(const rpc::TaskSpec& spec, std::string output,
                                          std::vector<internal::ReturnData> more, bool retryable,
                                          const std::vector<internal::RefData>& returned_refs) {
  rpc::TaskResult result;
  result.set_task_id(spec.task_id());
  result.set_return_id(spec.return_id());
  auto fail = [&](rpc::ErrorType type, const std::string& message) { return FailedResult(spec, type, message); };
  int num_returns = NumReturns(spec);
  if (num_returns > 1 && more.empty()) {
    // It handed back one value (a failure, raised again by whoever reads it): every
    // return is that value.
    for (int i = 2; i <= num_returns; ++i) more.push_back(internal::ReturnData{output, {}});
  }
  result.set_retryable_error(retryable);
  try {
    *result.mutable_value() = hooks_.store_result(spec, spec.return_id(), std::move(output), returned_refs);
    for (size_t i = 0; i < more.size(); ++i) {
      *result.add_more_values() =
          hooks_.store_result(spec, ReturnId(spec, static_cast<int>(i) + 2).Binary(), std::move(more[i].value), more[i].refs);
    }
  } catch (const orb::OutOfDiskError& e) {
    return fail(rpc::OUT_OF_DISK, spec.function_name() + ": cannot store the result: " + e.what());
  } catch (const std::exception& e) {
    return fail(rpc::OBJECT_STORE_FULL, spec.function_name() + ": cannot store the result: " + e.what());
  }
  return result;
}

namespace internal {
std::shared_ptr<DeferredCall> DeferCurrentCall() { return TaskReceiver::DeferCurrentCall(); }
}  // namespace internal

}  // namespace orb

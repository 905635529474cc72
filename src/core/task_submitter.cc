#include "core/task_submitter.h"

#include "core/task_event_buffer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <future>
#include <optional>
#include <sstream>

namespace orb {
namespace {

// Tasks share leases when they need the same resources, placement, runtime environment
// and language.
std::string ShapeKey(const std::map<std::string, double>& resources, const rpc::SchedulingOptions& scheduling,
                     const std::string& runtime_env, rpc::Language language) {
  std::ostringstream os;
  for (const auto& [k, v] : resources) os << k << '=' << v << ';';
  os << '|' << std::hash<std::string>()(runtime_env) << '|' << language;
  // Hex keeps the key valid UTF-8: it travels in a proto string field.
  std::string bytes = scheduling.SerializeAsString();
  os << '|' << id_internal::ToHex(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return os.str();
}

std::string AddressString(const rpc::Address& a) { return a.ip() + ":" + std::to_string(a.port()); }

// Whether this thread holds the submitter's lock: an RPC callback that gRPC runs inline,
// inside a call started under the lock, must not take it again.
thread_local bool holding_lock = false;

class Locked {
 public:
  explicit Locked(std::mutex& mu) : lock_(mu) { holding_lock = true; }
  ~Locked() { holding_lock = false; }

 private:
  std::lock_guard<std::mutex> lock_;
};

}  // namespace

TaskSubmitter::TaskSubmitter(EventLoop* loop, ObjectTable* objects, RpcClient<rpc::RayletService>* raylet,
                             RayletClientPool* raylets, TaskPusher* pusher, TaskSubmitterOptions options)
    : loop_(loop),
      objects_(objects),
      raylet_(std::shared_ptr<void>(), raylet),  // aliasing, owning nothing
      raylets_(raylets), pusher_(pusher), options_(std::move(options)) {}

void TaskSubmitter::Submit(std::shared_ptr<const rpc::TaskSpec> spec) {
  // Arguments stay alive until the task is done with them.
  bool has_refs = false;
  for (const auto& arg : spec->args()) {
    if (!arg.has_ref()) continue;
    objects_->AddTaskRef(ObjectID::FromBinary(arg.ref().object_id()));
    has_refs = true;
  }
  if (!has_refs) {
    // Fast path, on the caller's thread: no dependencies to wait for, so a task can go
    // straight to a leased worker without a hop through the loop.
    Locked lock(mu_);
    Enqueue(std::move(spec));
    return;
  }
  loop_->Post([this, spec = std::move(spec)]() mutable {
    Locked lock(mu_);
    ResolveDependencies(std::move(spec));
  });
}

void TaskSubmitter::ResolveDependencies(std::shared_ptr<const rpc::TaskSpec> spec) {
  if (IsCancelled(spec->task_id())) {  // cancelled on its way here
    return Fail(*spec, rpc::TASK_CANCELLED, "task '" + spec->function_name() + "' was cancelled while it waited for its arguments");
  }
  auto remaining = std::make_shared<int>(1);  // one for this function, released at the end
  resolving_[spec->task_id()] = spec;
  auto done = [this, spec, remaining] {
    if (--*remaining > 0) return;
    if (resolving_.erase(spec->task_id()) == 0) return;  // cancelled while it waited
    // Every owned argument is ready: inline small values, fail on errors. The spec is
    // copied only when an argument is inlined (the shared one stays as the lineage).
    std::shared_ptr<rpc::TaskSpec> inlined;
    for (int i = 0; i < spec->args_size(); ++i) {
      const rpc::TaskArg& arg = spec->args(i);
      if (!arg.has_ref()) continue;
      ObjectID id = ObjectID::FromBinary(arg.ref().object_id());
      ObjectValuePtr value = objects_->GetIfReady(id);
      if (!value) continue;  // borrowed: the worker asks its owner
      if (value->has_error()) {
        return Fail(*spec, value->error().type(), value->error().message());
      }
      // A value that holds ObjectRefs stays a reference: the object keeps them alive
      // until the worker has borrowed them.
      if (value->kind_case() == rpc::ObjectValue::kInlineValue &&
          value->inline_value().size() <= options_.max_inline_arg_bytes && !objects_->HoldsRefs(id)) {
        if (!inlined) inlined = std::make_shared<rpc::TaskSpec>(*spec);
        inlined->mutable_args(i)->set_value(value->inline_value());
        objects_->RemoveTaskRef(id);
      }
    }
    Enqueue(inlined ? std::shared_ptr<const rpc::TaskSpec>(std::move(inlined)) : spec);
  };
  for (const auto& arg : spec->args()) {
    if (!arg.has_ref()) continue;
    ObjectID id = ObjectID::FromBinary(arg.ref().object_id());
    ++*remaining;
    bool owned = objects_->OnReady(id, [this, done](ObjectValuePtr) {
      loop_->Post([this, done] {
        Locked lock(mu_);
        done();
      });
    });
    if (!owned) --*remaining;
  }
  done();
}

void TaskSubmitter::Enqueue(std::shared_ptr<const rpc::TaskSpec> spec) {
  if (IsCancelled(spec->task_id())) return Fail(*spec, rpc::TASK_CANCELLED, "task '" + spec->function_name() + "' was cancelled before it ran");
  std::map<std::string, double> resources(spec->resources().begin(), spec->resources().end());
  std::string key = ShapeKey(resources, spec->scheduling(), spec->runtime_env(), spec->language());
  ShapeQueue& queue = queues_[key];
  queue.resources = resources;
  queue.scheduling = spec->scheduling();
  queue.runtime_env = spec->runtime_env();
  queue.language = spec->language();
  if (options_.events) options_.events->RecordSpec(*spec, rpc::PENDING_NODE_ASSIGNMENT);
  queue.pending.push_back(std::move(spec));
  Pump(key);
}

void TaskSubmitter::Pump(const std::string& key) {
  if (stopped_) return;
  ShapeQueue& queue = queues_[key];
  if (queue.pending.empty()) return;
  // Spread queued work over every worker we have or have asked for.
  int expected_workers = static_cast<int>(queue.leases.size()) + queue.lease_requests;
  for (auto& [id, lease] : queue.leases) {
    if (queue.spread()) {
      // One task per lease: a lease is where the last task was placed, not the next.
      if (!lease.used && !queue.pending.empty()) PushBatch(key, lease, 1);
      continue;
    }
    while (!queue.pending.empty() && lease.batches_in_flight < options_.max_batches_in_flight &&
           !lease.holds_max_calls_task) {
      int share = static_cast<int>(queue.pending.size()) / std::max(1, expected_workers * options_.max_batches_in_flight);
      PushBatch(key, lease, std::clamp(share, 1, options_.max_batch));
    }
  }
  if (queue.pending.empty()) return CancelLeaseRequests(queue);
  // More leases while tasks wait, up to one per waiting task.
  int waiting = static_cast<int>(queue.pending.size());
  while (queue.lease_requests < std::min(waiting, options_.max_pending_lease_requests)) {
    RequestLease(key, raylet_, /*spilled=*/false);
  }
}

void TaskSubmitter::CancelLeaseRequests(ShapeQueue& queue) {
  for (auto& [request_id, raylet] : queue.outstanding) {
    rpc::CancelWorkerLeaseRequest request;
    request.set_requester_worker_id(options_.worker_id.Binary());
    request.set_lease_request_id(request_id);
    spdlog::debug("cancelling lease request {} at {}", request_id, raylet->address());
    // The request's own reply (canceled, or the lease if it was granted first) ends it.
    raylet->Call<rpc::CancelWorkerLeaseReply>(ORB_RPC(CancelWorkerLease), request,
                                              [](const absl::Status&, rpc::CancelWorkerLeaseReply&&) {});
  }
  queue.outstanding.clear();
}

void TaskSubmitter::RequestLease(const std::string& key, std::shared_ptr<RpcClient<rpc::RayletService>> raylet,
                                 bool spilled, uint64_t request_id) {
  if (stopped_) return;
  ShapeQueue& queue = queues_[key];
  queue.lease_requests++;
  if (request_id == 0) request_id = next_request_id_++;
  queue.outstanding[request_id] = raylet;
  spdlog::debug("requesting a lease for shape {} from {}", key, raylet->address());
  rpc::RequestWorkerLeaseRequest request;
  request.set_job_id(options_.job_id.Binary());
  request.set_scheduling_class(key);
  request.set_requester_worker_id(options_.worker_id.Binary());
  request.set_grant_or_reject(spilled);
  *request.mutable_scheduling() = queue.scheduling;
  request.set_runtime_env(queue.runtime_env);
  request.set_language(queue.language);
  // The memory monitor kills a retriable task's worker first.
  request.set_retriable(!queue.pending.empty() && queue.pending.front()->max_retries() != 0);
  request.set_lease_request_id(request_id);
  for (const auto& [k, v] : queue.resources) (*request.mutable_resources())[k] = v;
  CallOptions call = CallOptions::UntilDone();  // a lease may wait long for resources
  raylet->Call<rpc::RequestWorkerLeaseReply>(
      ORB_RPC(RequestWorkerLease), request,
      [this, key, raylet, request_id](const absl::Status& status, rpc::RequestWorkerLeaseReply&& reply) {
        loop_->Post([this, key, raylet, request_id, status, reply = std::move(reply)]() mutable {
          Locked lock(mu_);
          OnLeaseReply(key, raylet, request_id, status, std::move(reply));
        });
      },
      call);
}

void TaskSubmitter::OnLeaseReply(const std::string& key, std::shared_ptr<RpcClient<rpc::RayletService>> raylet,
                                 uint64_t request_id, const absl::Status& status, rpc::RequestWorkerLeaseReply reply) {
  ShapeQueue& queue = queues_[key];
  queue.lease_requests--;
  // Cancelled (or cancel sent) when the queue emptied: a spilled one is not followed.
  bool cancelled = queue.outstanding.erase(request_id) == 0;
  if (reply.canceled()) return Pump(key);  // tasks that came since get requests of their own
  bool remote = raylet != raylet_;
  if (!status.ok() && remote) {
    // The node it was spilled to is unreachable (perhaps dead): schedule again from
    // here after a pause, by when the cluster view may have caught up.
    spdlog::warn("raylet {} did not answer a spilled lease request: {}", raylet->address(), status.ToString());
    queue.lease_requests++;
    loop_->RunAfter(std::chrono::milliseconds(500), [this, key] {
      Locked lock(mu_);
      queues_[key].lease_requests--;
      Pump(key);
    });
    return;
  }
  if (!status.ok()) {
    reply.set_rejected(true);
    reply.mutable_error()->set_type(rpc::WORKER_CRASHED);
    reply.mutable_error()->set_message("cannot lease a worker from the raylet: " + std::string(status.message()));
  }
  if (reply.has_retry_at_raylet()) {
    if (cancelled || queue.pending.empty()) return Pump(key);
    const auto& target = reply.retry_at_raylet();
    RequestLease(key, raylets_->Get(target.ip() + ":" + std::to_string(target.port())), /*spilled=*/true,
                 request_id);
    return;
  }
  if (reply.rejected()) {
    if (reply.error().type() == rpc::ERROR_NONE) {
      Pump(key);  // a spilled request the target could not take: schedule again
      return;
    }
    // The request can never be served (or the raylet is gone): fail what waits for it.
    if (queue.lease_requests == 0 && queue.leases.empty()) {
      auto pending = std::move(queue.pending);
      queue.pending.clear();
      for (const auto& spec : pending) Fail(*spec, reply.error().type(), reply.error().message());
    }
    return;
  }
  LeaseID id = LeaseID::FromBinary(reply.lease_id());
  spdlog::debug("got lease {} ({} pending)", id.Hex().substr(0, 8), queue.pending.size());
  Lease& lease = queue.leases[id];
  lease.id = id;
  lease.raylet = raylet;
  lease.address = reply.worker_address();
  lease.gpu_ids.assign(reply.gpu_ids().begin(), reply.gpu_ids().end());
  lease.gpu_env = std::move(*reply.mutable_gpu_env());
  if (queue.pending.empty()) {
    MaybeReturnIdle(key, id);
    return;
  }
  Pump(key);
}

void TaskSubmitter::PushBatch(const std::string& key, Lease& lease, int batch_size) {
  ShapeQueue& queue = queues_[key];
  rpc::PushTasksRequest request;
  request.set_intended_worker_id(lease.address.worker_id());
  for (int32_t gpu : lease.gpu_ids) request.add_gpu_ids(gpu);
  *request.mutable_gpu_env() = lease.gpu_env;
  std::vector<rpc::TaskSpec> batch;
  for (int i = 0; i < batch_size && !queue.pending.empty(); ++i) {
    // A task that was in a batch whose worker died goes alone, so that if it is the
    // one that kills workers, it alone is charged for it.
    bool suspect = queue.suspects.count(queue.pending.front()->task_id()) > 0;
    if (suspect && !batch.empty()) break;
    // A task with max_calls goes alone, and last: its worker may end after it.
    bool limited = queue.pending.front()->max_calls() > 0;
    if (limited && !batch.empty()) break;
    lease.holds_max_calls_task = limited;
    batch.push_back(*queue.pending.front());
    queue.pending.pop_front();
    if (options_.events) options_.events->RecordSpec(batch.back(), rpc::SUBMITTED_TO_WORKER);
    *request.add_tasks() = batch.back();
    if (suspect || limited) break;
  }
  lease.batches_in_flight++;
  lease.used = true;
  spdlog::debug("pushing {} task(s) to lease {}", batch.size(), lease.id.Hex().substr(0, 8));
  auto pushed = in_flight_.Add(std::move(batch), lease.address);
  LeaseID lease_id = lease.id;
  pusher_->Push(
      lease.address, request,
      [this, key, lease_id, pushed](const absl::Status& status, rpc::PushTasksReply&& reply) mutable {
        // Tasks whose results came early are done; the rest are this reply's.
        std::vector<rpc::TaskSpec> remaining = in_flight_.Finish(pushed);
        if (status.ok() && !holding_lock) {
          // On the transport thread, no hop through the loop: free the lease for the next
          // push first, then record the results, waking any Get. A blocking caller's
          // next task can then go out from its own thread at once.
          {
            Locked lock(mu_);
            OnBatchDone(key, lease_id, remaining, status, reply.worker_exiting());
          }
          CompleteBatch(remaining, reply);
          return;
        }
        bool exiting = status.ok() && reply.worker_exiting();
        if (status.ok()) CompleteBatch(remaining, reply);
        loop_->Post([this, key, lease_id, remaining = std::move(remaining), status, exiting]() mutable {
          Locked lock(mu_);
          OnBatchDone(key, lease_id, std::move(remaining), status, exiting);
        });
      });
}

bool TaskSubmitter::CompleteEarly(rpc::TaskResult result) {
  std::optional<rpc::TaskSpec> spec = in_flight_.TakeEarly(result.task_id());
  if (!spec) return false;
  if (RetryOnError(*spec, result)) return true;
  Complete(*spec, std::move(*result.mutable_value()), std::move(*result.mutable_more_values()));
  return true;
}

bool TaskSubmitter::RetryOnError(const rpc::TaskSpec& spec, const rpc::TaskResult& result) {
  if (!result.retryable_error() || spec.attempt() >= spec.max_retries()) return false;
  rpc::TaskSpec retry = spec;
  retry.set_attempt(spec.attempt() + 1);
  spdlog::info("task '{}' raised an error; retried (retry_exceptions, attempt {} of {})", spec.function_name(),
               retry.attempt(), spec.max_retries());
  // Not here: this may run under the lock (a reply handled inline) or on a transport thread.
  loop_->Post([this, spec, retry = std::make_shared<const rpc::TaskSpec>(std::move(retry))]() mutable {
    Locked lock(mu_);
    if (options_.events) {
      rpc::ErrorInfo error;
      error.set_type(rpc::TASK_ERROR);
      error.set_message("its code raised an error; retried (retry_exceptions)");
      options_.events->RecordSpec(spec, rpc::FAILED, &error);
    }
    Enqueue(std::move(retry));
  });
  return true;
}

void TaskSubmitter::CompleteBatch(const std::vector<rpc::TaskSpec>& batch, rpc::PushTasksReply& reply) {
  std::unordered_map<std::string, rpc::TaskResult*> by_task;
  for (auto& result : *reply.mutable_results()) by_task[result.task_id()] = &result;
  for (const auto& spec : batch) {
    auto it = by_task.find(spec.task_id());
    if (it == by_task.end()) {
      Fail(spec, rpc::WORKER_CRASHED, "the worker answered without a result for this task");
    } else if (!RetryOnError(spec, *it->second)) {
      Complete(spec, std::move(*it->second->mutable_value()), std::move(*it->second->mutable_more_values()));
    }
  }
}

void TaskSubmitter::OnBatchDone(const std::string& key, const LeaseID& lease_id, std::vector<rpc::TaskSpec> batch,
                                const absl::Status& status, bool worker_exiting) {
  ShapeQueue& queue = queues_[key];
  auto lease_it = queue.leases.find(lease_id);
  if (status.ok()) {
    for (const auto& spec : batch) queue.suspects.erase(spec.task_id());
    if (lease_it != queue.leases.end()) {
      lease_it->second.batches_in_flight--;
      lease_it->second.holds_max_calls_task = false;
      if (worker_exiting) {
        // Its worker ran a function's max_calls-th call and ends: the lease goes back
        // for good (the raylet never hands that worker out again).
        std::shared_ptr<RpcClient<rpc::RayletService>> raylet = lease_it->second.raylet;
        queue.leases.erase(lease_it);
        ReturnLease(raylet, lease_id, /*worker_failed=*/false, /*worker_exiting=*/true);
      } else if (queue.spread() && lease_it->second.batches_in_flight == 0) {
        // Its task ran: the lease goes back, and the next task is placed anew.
        std::shared_ptr<RpcClient<rpc::RayletService>> raylet = lease_it->second.raylet;
        queue.leases.erase(lease_it);
        ReturnLease(raylet, lease_id, /*worker_failed=*/false);
      } else if (queue.pending.empty() && lease_it->second.batches_in_flight == 0) {
        lease_it->second.idle_since = std::chrono::steady_clock::now();
        if (!lease_it->second.idle_timer_set) SetIdleTimer(key, lease_it->second, options_.lease_idle);
      }
    }
    Pump(key);
    return;
  }
  // Shutting down: the leases went back, and the calls still out were cancelled.
  if (stopped_) return;
  // The worker is gone (or unreachable): drop the lease, learn from its raylet how the
  // worker ended, then retry what it held.
  spdlog::warn("worker at {} failed while running {} task(s): {}",
               lease_it != queue.leases.end() ? AddressString(lease_it->second.address) : "?", batch.size(),
               status.ToString());
  if (lease_it == queue.leases.end()) return OnWorkerLost(key, std::move(batch), std::string(status.message()));
  std::shared_ptr<RpcClient<rpc::RayletService>> raylet = lease_it->second.raylet;
  queue.leases.erase(lease_it);
  rpc::ReturnWorkerRequest request;
  request.set_lease_id(lease_id.Binary());
  request.set_worker_failed(true);
  std::string fallback(status.message());
  raylet->Call<rpc::ReturnWorkerReply>(
      ORB_RPC(ReturnWorker), request,
      [this, key, fallback, batch = std::move(batch)](const absl::Status& s, rpc::ReturnWorkerReply&& reply) mutable {
        bool known = s.ok() && !reply.worker_exit().empty();
        std::string cause = known ? reply.worker_exit() : fallback;
        rpc::ErrorType type = known && reply.worker_exit_type() == rpc::OUT_OF_MEMORY ? rpc::OUT_OF_MEMORY
                                                                                      : rpc::WORKER_CRASHED;
        loop_->Post([this, key, cause, type, batch = std::move(batch)]() mutable {
          Locked lock(mu_);
          OnWorkerLost(key, std::move(batch), cause, type);
        });
      },
      CallOptions::Retried());
}

void TaskSubmitter::OnWorkerLost(const std::string& key, std::vector<rpc::TaskSpec> batch, const std::string& cause,
                                 rpc::ErrorType type) {
  ShapeQueue& queue = queues_[key];
  // Alone in its batch, the task was the one running: it is charged a retry. With
  // others, which one was running is not known: none is charged, and each goes again
  // alone (see PushBatch), so a task that kills workers is found out without failing
  // the healthy ones pushed with it.
  bool alone = batch.size() == 1;
  std::vector<std::shared_ptr<const rpc::TaskSpec>> regrown;  // retries whose memory request grew
  for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
    rpc::TaskSpec& spec = *it;
    if (IsCancelled(spec.task_id())) {
      queue.suspects.erase(spec.task_id());
      Fail(spec, rpc::TASK_CANCELLED, "task '" + spec.function_name() + "' was cancelled; its worker ended (" + cause + ")");
    } else if (!alone) {
      queue.suspects.insert(spec.task_id());
      queue.pending.push_front(std::make_shared<const rpc::TaskSpec>(std::move(spec)));
    } else if (spec.attempt() < spec.max_retries()) {
      // The attempt that failed is recorded with what it asked for; the retry asks anew.
      std::optional<rpc::TaskSpec> regrow;
      std::string grown;
      if (type == rpc::OUT_OF_MEMORY && spec.memory_growth() > 1) {
        regrow = spec;
        grown = GrowMemory(*regrow);
      }
      if (options_.events) {
        rpc::ErrorInfo error;
        error.set_type(type);
        error.set_message("the worker running it died (" + cause + "); retried" + grown);
        options_.events->RecordSpec(spec, rpc::FAILED, &error);
      }
      if (!grown.empty()) spec = std::move(*regrow);
      spec.set_attempt(spec.attempt() + 1);
      if (!grown.empty()) {
        // A new shape: it queues, and is leased for, with its new memory request.
        spdlog::info("task '{}' was killed for memory; retried{}", spec.function_name(), grown);
        queue.suspects.erase(spec.task_id());
        regrown.push_back(std::make_shared<const rpc::TaskSpec>(std::move(spec)));
        continue;
      }
      queue.pending.push_front(std::make_shared<const rpc::TaskSpec>(std::move(spec)));
    } else {
      queue.suspects.erase(spec.task_id());
      Fail(spec, type,
           "the worker running task '" + spec.function_name() + "' died (" + cause + "); " +
               std::to_string(spec.max_retries()) + " retries used");
    }
  }
  Pump(key);
  for (auto& spec : regrown) Enqueue(std::move(spec));  // may rehash queues_: after `queue`'s last use
}

std::string TaskSubmitter::GrowMemory(rpc::TaskSpec& spec) {
  auto memory = spec.resources().find("memory");
  if (spec.memory_growth() <= 1 || memory == spec.resources().end() || memory->second <= 0) return "";
  double now = memory->second;
  double next = now * spec.memory_growth();
  if (spec.max_memory() > 0) next = std::min(next, spec.max_memory());
  // Whole bytes, as a memory request is.
  next = std::floor(next);
  if (next <= now) return "";  // at its cap: retried as it was
  (*spec.mutable_resources())["memory"] = next;
  return " with memory " + std::to_string(static_cast<int64_t>(next)) + " bytes (was " +
         std::to_string(static_cast<int64_t>(now)) + ", memory_growth " + std::to_string(spec.memory_growth()) + ")";
}

void TaskSubmitter::MaybeReturnIdle(const std::string& key, const LeaseID& lease_id) {
  ShapeQueue& queue = queues_[key];
  auto it = queue.leases.find(lease_id);
  if (it == queue.leases.end() || it->second.batches_in_flight > 0 || !queue.pending.empty()) return;
  std::shared_ptr<RpcClient<rpc::RayletService>> raylet = it->second.raylet;
  queue.leases.erase(it);
  ReturnLease(raylet, lease_id, /*worker_failed=*/false);
}

void TaskSubmitter::SetIdleTimer(const std::string& key, Lease& lease, std::chrono::milliseconds after) {
  lease.idle_timer_set = true;
  loop_->RunAfter(after, [this, key, lease_id = lease.id] {
    Locked lock(mu_);
    ShapeQueue& queue = queues_[key];
    auto it = queue.leases.find(lease_id);
    if (it == queue.leases.end()) return;
    Lease& idle = it->second;
    idle.idle_timer_set = false;
    // Busy now: the batch that finishes last sets the timer again.
    if (idle.batches_in_flight > 0 || !queue.pending.empty()) return;
    auto since = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - idle.idle_since);
    if (since >= options_.lease_idle) return MaybeReturnIdle(key, lease_id);
    SetIdleTimer(key, idle, options_.lease_idle - since);
  });
}

void TaskSubmitter::ReturnLease(const std::shared_ptr<RpcClient<rpc::RayletService>>& raylet, const LeaseID& lease_id,
                                bool worker_failed, bool worker_exiting) {
  rpc::ReturnWorkerRequest request;
  request.set_lease_id(lease_id.Binary());
  request.set_worker_failed(worker_failed);
  request.set_worker_exiting(worker_exiting);
  raylet->Call<rpc::ReturnWorkerReply>(
      ORB_RPC(ReturnWorker), request, [](const absl::Status&, rpc::ReturnWorkerReply&&) {}, CallOptions::Retried());
}

void TaskSubmitter::Shutdown() {
  // Every lease goes back, and the raylets' answers are awaited (a while): a return
  // still in flight when the process's clients are torn down would be cancelled, and
  // a raylet on another node would hold the lease's resources until it learns the
  // job ended.
  struct Returns {
    std::mutex mu;
    std::condition_variable cv;
    int outstanding = 0;
    bool posted = false;
  };
  auto returns = std::make_shared<Returns>();
  loop_->Post([this, returns] {
    Locked lock(mu_);
    stopped_ = true;
    int n = 0;
    for (auto& [key, queue] : queues_) {
      for (auto& [id, lease] : queue.leases) {
        ++n;
        rpc::ReturnWorkerRequest request;
        request.set_lease_id(id.Binary());
        lease.raylet->Call<rpc::ReturnWorkerReply>(ORB_RPC(ReturnWorker), request,
                                                   [returns](const absl::Status&, rpc::ReturnWorkerReply&&) {
                                                     std::lock_guard<std::mutex> l(returns->mu);
                                                     --returns->outstanding;
                                                     returns->cv.notify_all();
                                                   });
      }
      queue.leases.clear();
    }
    std::lock_guard<std::mutex> l(returns->mu);
    returns->outstanding += n;
    returns->posted = true;
    returns->cv.notify_all();
  });
  std::unique_lock<std::mutex> l(returns->mu);
  returns->cv.wait_for(l, std::chrono::seconds(2), [&] { return returns->posted && returns->outstanding <= 0; });
}

CancelOutcome TaskSubmitter::Cancel(const std::string& task_id) {
  CancelOutcome outcome;
  {
    Locked lock(mu_);
    for (auto& [key, queue] : queues_) {
      auto it = std::find_if(queue.pending.begin(), queue.pending.end(),
                             [&](const auto& spec) { return spec->task_id() == task_id; });
      if (it == queue.pending.end()) continue;
      std::shared_ptr<const rpc::TaskSpec> spec = *it;
      queue.pending.erase(it);
      queue.suspects.erase(task_id);
      if (queue.pending.empty()) CancelLeaseRequests(queue);
      Fail(*spec, rpc::TASK_CANCELLED, "task '" + spec->function_name() + "' was cancelled before it ran");
      outcome.kind = CancelOutcome::kDequeued;
      return outcome;
    }
    auto resolving = resolving_.find(task_id);
    if (resolving != resolving_.end()) {
      std::shared_ptr<const rpc::TaskSpec> spec = std::move(resolving->second);
      resolving_.erase(resolving);
      Fail(*spec, rpc::TASK_CANCELLED, "task '" + spec->function_name() + "' was cancelled while it waited for its arguments");
      outcome.kind = CancelOutcome::kDequeued;
      return outcome;
    }
    if (std::optional<rpc::Address> worker = in_flight_.WorkerOf(task_id)) {
      outcome.kind = CancelOutcome::kOnWorker;
      outcome.worker = std::move(*worker);
    }
  }
  // Pushed, waiting for its arguments, or between the two (a retry on its way back to
  // a queue): whatever ends it next ends it as cancelled.
  std::lock_guard<std::mutex> lock(cancel_mu_);
  cancelled_.insert(task_id);
  return outcome;
}

bool TaskSubmitter::IsCancelled(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(cancel_mu_);
  return !cancelled_.empty() && cancelled_.count(task_id) > 0;
}

void TaskSubmitter::Complete(const rpc::TaskSpec& spec, rpc::ObjectValue value, MoreReturnValues more) {
  {
    std::lock_guard<std::mutex> lock(cancel_mu_);
    // A cancelled task that failed (interrupted, or its worker killed) failed because
    // it was cancelled; one that finished first keeps its result.
    if (!cancelled_.empty() && cancelled_.erase(spec.task_id()) > 0 && value.has_error() &&
        value.error().type() != rpc::TASK_CANCELLED) {
      std::string was = value.error().message();
      value.mutable_error()->set_type(rpc::TASK_CANCELLED);
      value.mutable_error()->set_message("task '" + spec.function_name() + "' was cancelled: " + was);
    }
  }
  if (options_.events) {
    options_.events->RecordSpec(spec, value.has_error() ? rpc::FAILED : rpc::FINISHED,
                                value.has_error() ? &value.error() : nullptr);
  }
  for (const auto& arg : spec.args()) {
    if (arg.has_ref()) objects_->RemoveTaskRef(ObjectID::FromBinary(arg.ref().object_id()));
  }
  for (const auto& ref : spec.inlined_refs()) objects_->RemoveLocalRef(ObjectID::FromBinary(ref.object_id()));
  SetReturnsReady(objects_, spec, std::move(value), std::move(more));
}

void TaskSubmitter::Fail(const rpc::TaskSpec& spec, rpc::ErrorType type, const std::string& message) {
  rpc::ObjectValue value;
  value.mutable_error()->set_type(type);
  value.mutable_error()->set_message(message);
  Complete(spec, std::move(value));
}

}  // namespace orb

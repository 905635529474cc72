#include "core/actor_submitter.h"

#include <algorithm>
#include <unordered_set>

#include "core/task_event_buffer.h"

#include <spdlog/spdlog.h>

namespace orb {
namespace {

constexpr int kMaxBatch = 500;
constexpr int kWatchWaitMs = 30000;
// How long calls lost in flight wait for the GCS to say why their actor died.
constexpr int kDeathInfoWaitMs = 1000;

}  // namespace

ActorSubmitter::ActorSubmitter(ObjectTable* objects, RpcClient<rpc::GcsService>* gcs, TaskPusher* pusher, Post post,
                               TaskEventBuffer* events)
    : objects_(objects), gcs_(gcs), pusher_(pusher), post_(std::move(post)), events_(events) {}

std::string ActorSubmitter::Describe(const rpc::ActorInfo& info) {
  return "actor " + ActorID::FromBinary(info.actor_id()).Hex() + " (" + info.class_name() + ")";
}

void ActorSubmitter::Submit(rpc::TaskSpec spec) {
  std::vector<ObjectID> pending;  // owned here, not ready
  for (const auto& arg : spec.args()) {
    if (!arg.has_ref()) continue;
    ObjectID id = ObjectID::FromBinary(arg.ref().object_id());
    objects_->AddTaskRef(id);
    if (post_ && objects_->IsOwned(id) && !objects_->GetIfReady(id)) pending.push_back(id);
  }
  std::string actor_id = spec.actor_id();
  std::string task_id = spec.task_id();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    ActorState& actor = actors_[actor_id];
    if (!pending.empty()) {
      // An earlier call to this actor makes it: the worker takes it there, in order.
      auto made_here = [&actor](const ObjectID& id) {
        std::string maker = id.Task().Binary();
        for (const Call& call : actor.waiting) {
          if (call.spec.task_id() == maker) return true;
        }
        for (const auto& [batch, calls] : actor.in_flight) {
          for (const Call& call : calls) {
            if (call.spec.task_id() == maker) return true;
          }
        }
        return false;
      };
      pending.erase(std::remove_if(pending.begin(), pending.end(), made_here), pending.end());
    }
    if (events_) events_->RecordSpec(spec, rpc::PENDING_NODE_ASSIGNMENT);
    Call call{std::move(spec), 0};
    call.unresolved = static_cast<int>(pending.size());
    actor.waiting.push_back(std::move(call));
    Pump(actor_id, actor);
  }
  Flush();
  // Registered with no lock held: a callback may run at once (the object became ready
  // meanwhile); it runs OnArgReady through post_, never under a lock of the caller's.
  for (const ObjectID& id : pending) {
    bool owned = objects_->OnReady(id, [this, actor_id, task_id](ObjectValuePtr) {
      post_([this, actor_id, task_id] { OnArgReady(actor_id, task_id); });
    });
    if (!owned) OnArgReady(actor_id, task_id);
  }
}

void ActorSubmitter::OnArgReady(const std::string& actor_id, const std::string& task_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ActorState& actor = actors_[actor_id];
    for (Call& call : actor.waiting) {
      if (call.spec.task_id() != task_id) continue;
      if (call.unresolved > 0 && --call.unresolved == 0) Pump(actor_id, actor);
      break;
    }
  }
  Flush();
}

void ActorSubmitter::Flush() {
  std::vector<std::function<void()>> sends;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sends.swap(outbox_);
  }
  for (auto& send : sends) send();
}

void ActorSubmitter::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
}

void ActorSubmitter::OnKilled(const std::string& actor_id, bool no_restart, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ActorState& actor = actors_[actor_id];
    actor.reachable = false;
    if (no_restart) {
      actor.known = true;
      actor.info.set_actor_id(actor_id);
      actor.info.set_state(rpc::ActorInfo::DEAD);
      actor.info.set_death_error(rpc::ACTOR_DIED);
      actor.info.set_death_reason(reason.empty() ? "killed by ActorHandle::Kill()" : reason);
    }
    Pump(actor_id, actor);
  }
  Flush();
}

CancelOutcome ActorSubmitter::Cancel(const std::string& task_id) {
  CancelOutcome outcome;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [actor_id, actor] : actors_) {
    auto it = std::find_if(actor.waiting.begin(), actor.waiting.end(),
                           [&](const Call& call) { return call.spec.task_id() == task_id; });
    if (it != actor.waiting.end()) {
      Call call = std::move(*it);
      actor.waiting.erase(it);
      FailCall(call, rpc::TASK_CANCELLED, "call '" + call.spec.function_name() + "' was cancelled before it ran");
      outcome.kind = CancelOutcome::kDequeued;
      return outcome;
    }
    for (const auto& [batch, calls] : actor.in_flight) {
      for (const auto& call : calls) {
        if (call.spec.task_id() != task_id || call.done) continue;
        outcome.kind = CancelOutcome::kOnWorker;
        outcome.worker = actor.info.address();
        return outcome;
      }
    }
  }
  return outcome;
}

bool ActorSubmitter::Owns(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [actor_id, actor] : actors_) {
    for (const Call& call : actor.waiting) {
      if (call.spec.task_id() == task_id) return true;
    }
    for (const auto& [batch, calls] : actor.in_flight) {
      for (const Call& call : calls) {
        if (call.spec.task_id() == task_id && !call.done) return true;
      }
    }
  }
  return false;
}

void ActorSubmitter::Pump(const std::string& actor_id, ActorState& actor) {
  if (stopped_) return;
  if (actor.known && actor.info.state() == rpc::ActorInfo::DEAD) {
    rpc::ErrorType type = actor.info.death_error() == rpc::ERROR_NONE ? rpc::ACTOR_DIED : actor.info.death_error();
    std::string message = Describe(actor.info) + " is dead: " + actor.info.death_reason();
    while (!actor.waiting.empty()) {
      FailCall(actor.waiting.front(), type, message);
      actor.waiting.pop_front();
    }
    return;
  }
  if (!actor.reachable) {
    if (!actor.watching) Watch(actor_id, actor);
    return;
  }
  // An ordered actor has one batch in flight; a concurrent one up to max_concurrency,
  // each of which its worker runs on its thread pool; each concurrency group up to the
  // number of calls it runs at once. A batch holds the calls of one group only, so that
  // one group's slow calls never hold back another's results.
  const rpc::ActorCreationSpec& creation = actor.info.creation_spec().actor_creation();
  auto limit = [&creation](const std::string& group) -> size_t {
    if (group.empty()) return static_cast<size_t>(std::max(1, creation.max_concurrency()));
    auto it = creation.concurrency_groups().find(group);
    // Not a group of the actor's: one at a time, and the worker answers it with why.
    return it == creation.concurrency_groups().end() ? 1 : static_cast<size_t>(std::max(1, it->second));
  };
  std::unordered_map<std::string, size_t> busy;
  for (const auto& [number, calls] : actor.in_flight) busy[calls.front().spec.concurrency_group()]++;
  // A call still waiting for its arguments holds an ordered group's later calls; a
  // concurrent group's pass it.
  std::unordered_set<std::string> held;
  auto sendable = [&](const Call& call) {
    const std::string& group = call.spec.concurrency_group();
    if (held.count(group)) return false;
    if (call.unresolved == 0) return true;
    if (limit(group) == 1) held.insert(group);
    return false;
  };
  while (true) {
    held.clear();
    auto first = std::find_if(actor.waiting.begin(), actor.waiting.end(), [&](const Call& call) {
      return busy[call.spec.concurrency_group()] < limit(call.spec.concurrency_group()) && sendable(call);
    });
    if (first == actor.waiting.end()) break;
    std::string group = first->spec.concurrency_group();
    std::vector<Call> batch;
    for (auto it = first; it != actor.waiting.end() && batch.size() < kMaxBatch;) {
      if (it->spec.concurrency_group() != group) {
        ++it;
        continue;
      }
      if (it->unresolved > 0) {
        if (limit(group) == 1) break;
        ++it;
        continue;
      }
      bool suspect = it->suspect;
      if (suspect && !batch.empty()) break;  // a suspect goes alone
      batch.push_back(std::move(*it));
      it = actor.waiting.erase(it);
      if (suspect) break;
    }
    busy[group]++;
    SendBatch(actor_id, actor, std::move(batch));
  }
}

void ActorSubmitter::SendBatch(const std::string& actor_id, ActorState& actor, std::vector<Call> calls) {
  uint64_t batch = actor.next_batch++;
  rpc::PushTasksRequest request;
  for (auto& call : calls) {
    // Retries learned after submission (the GCS's first report) apply from now on.
    if (call.retries_left == 0 && call.spec.attempt() == 0) call.retries_left = actor.info.max_task_retries();
    *request.add_tasks() = call.spec;
    if (events_) events_->RecordSpec(call.spec, rpc::SUBMITTED_TO_WORKER);
  }
  const rpc::Address& address = actor.info.address();
  request.set_intended_worker_id(address.worker_id());
  if (calls.size() > 1) {
    for (const auto& call : calls) in_flight_calls_[call.spec.task_id()] = {actor_id, batch};
  }
  actor.in_flight[batch] = std::move(calls);
  outbox_.push_back([this, address, actor_id, batch, request = std::move(request)] {
    pusher_->Push(address, request, [this, actor_id, batch](const absl::Status& status, rpc::PushTasksReply&& reply) {
      OnBatchDone(actor_id, batch, status, std::move(reply));
    });
  });
}

void ActorSubmitter::OnBatchDone(const std::string& actor_id, uint64_t batch, const absl::Status& status,
                                 rpc::PushTasksReply reply) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    OnBatchDoneLocked(actor_id, batch, status, std::move(reply));
  }
  Flush();
}

void ActorSubmitter::OnBatchDoneLocked(const std::string& actor_id, uint64_t batch, const absl::Status& status,
                                       rpc::PushTasksReply reply) {
  ActorState& actor = actors_[actor_id];
  auto it = actor.in_flight.find(batch);
  if (it == actor.in_flight.end()) return;
  std::vector<Call> calls;
  for (auto& call : it->second) {
    in_flight_calls_.erase(call.spec.task_id());
    if (!call.done) calls.push_back(std::move(call));
  }
  actor.in_flight.erase(it);
  if (status.ok()) {
    std::unordered_map<std::string, rpc::TaskResult*> by_task;
    for (auto& result : *reply.mutable_results()) by_task[result.task_id()] = &result;
    for (auto& call : calls) {
      auto found = by_task.find(call.spec.task_id());
      if (found == by_task.end()) {
        FailCall(call, rpc::ACTOR_DIED, Describe(actor.info) + " answered without a result for this call");
      } else {
        // The worker itself says the actor is gone (ExitActor): send nothing more there
        // until the GCS reports its end.
        if (found->second->value().error().type() == rpc::ACTOR_DIED) {
          actor.reachable = false;
          actor.exiting = true;
        }
        Complete(call.spec, std::move(*found->second->mutable_value()), std::move(*found->second->mutable_more_values()));
      }
    }
    return Pump(actor_id, actor);
  }
  if (stopped_ || status.code() == absl::StatusCode::kCancelled) return;
  // The actor's process is gone (or unreachable): retry what may be retried once the
  // GCS says where it lives again, in the original order, ahead of later calls.
  actor.reachable = false;
  std::string why = Describe(actor.info) + " died while running this call (" + std::string(status.message()) + ")";
  bool alone = calls.size() == 1;  // then it was the call running
  for (auto call = calls.rbegin(); call != calls.rend(); ++call) {
    if (call->retries_left == 0) {
      actor.lost_why = why;
      actor.lost.push_back(std::move(*call));
      continue;
    }
    if (alone) {
      if (call->retries_left > 0) --call->retries_left;
      call->spec.set_attempt(call->spec.attempt() + 1);
      call->suspect = false;
    } else {
      call->suspect = true;
    }
    actor.waiting.push_front(std::move(*call));
  }
  // Known dead already (this process killed it), or a long watch is out (unless the actor
  // said it is exiting: the GCS is told at once, and answers the watch): say what is known.
  bool dead = actor.known && actor.info.state() == rpc::ActorInfo::DEAD;
  if (!actor.lost.empty() && (dead || (actor.watching && !actor.exiting))) {
    FailLost(actor);
  }
  Pump(actor_id, actor);
}

void ActorSubmitter::FailLost(ActorState& actor) {
  if (actor.lost.empty()) return;
  std::string message = actor.lost_why;
  rpc::ErrorType type = rpc::ACTOR_DIED;
  if (actor.known && actor.info.state() == rpc::ActorInfo::DEAD) {
    message += "; the actor is dead: " + actor.info.death_reason();
    if (actor.info.death_error() != rpc::ERROR_NONE) type = actor.info.death_error();
  } else {
    message += "; SetMaxTaskRetries(n) lets calls in flight run again after a restart";
  }
  // In submission order (they were taken newest first).
  for (auto call = actor.lost.rbegin(); call != actor.lost.rend(); ++call) FailCall(*call, type, message);
  actor.lost.clear();
}

bool ActorSubmitter::CompleteEarly(rpc::TaskResult result) {
  std::lock_guard<std::mutex> lock(mu_);
  auto index = in_flight_calls_.find(result.task_id());
  if (index == in_flight_calls_.end()) return false;
  auto [actor_id, batch] = index->second;
  ActorState& actor = actors_[actor_id];
  auto it = actor.in_flight.find(batch);
  if (it == actor.in_flight.end()) return false;
  for (auto& call : it->second) {
    if (call.spec.task_id() != result.task_id() || call.done) continue;
    call.done = true;
    if (result.value().error().type() == rpc::ACTOR_DIED) {  // ExitActor
      actor.reachable = false;
      actor.exiting = true;
    }
    Complete(call.spec, std::move(*result.mutable_value()), std::move(*result.mutable_more_values()));
    return true;
  }
  return false;
}

void ActorSubmitter::Watch(const std::string& actor_id, ActorState& actor) {
  actor.watching = true;
  rpc::GetActorInfoRequest request;
  request.set_actor_id(actor_id);
  // Unknown: the current state at once. Known (pending, restarting, or alive but a push
  // failed): the next version, or the same one again after kWatchWaitMs.
  request.set_after_version(actor.known ? actor.info.version() : -1);
  request.set_wait_ms(actor.lost.empty() ? kWatchWaitMs : kDeathInfoWaitMs);
  outbox_.push_back([this, actor_id, request = std::move(request)] {
    CallOptions options;
    options.timeout = std::chrono::milliseconds(kWatchWaitMs + 10000);
    options.max_attempts = 5;
    gcs_->Call<rpc::GetActorInfoReply>(
        ORB_RPC(GetActorInfo), request,
        [this, actor_id](const absl::Status& status, rpc::GetActorInfoReply&& reply) {
          OnActorInfo(actor_id, status, std::move(reply));
        },
        options);
  });
}

void ActorSubmitter::OnActorInfo(const std::string& actor_id, const absl::Status& status,
                                 rpc::GetActorInfoReply reply) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    OnActorInfoLocked(actor_id, status, std::move(reply));
  }
  Flush();
}

void ActorSubmitter::OnActorInfoLocked(const std::string& actor_id, const absl::Status& status,
                                       rpc::GetActorInfoReply reply) {
  ActorState& actor = actors_[actor_id];
  actor.watching = false;
  if (stopped_ || status.code() == absl::StatusCode::kCancelled) return;
  if (status.ok() && !reply.found()) {
    actor.known = true;
    actor.info.set_actor_id(actor_id);
    actor.info.set_state(rpc::ActorInfo::DEAD);
    actor.info.set_death_reason(
        "the GCS does not know it (dead long enough to be forgotten, or a handle from another cluster)");
  } else if (status.ok() && (!actor.known || reply.actor().version() >= actor.info.version())) {
    bool newer = !actor.known || reply.actor().version() > actor.info.version();
    actor.info = std::move(*reply.mutable_actor());
    actor.known = true;
    // Same version after a failed push: the GCS has not noticed yet; try again.
    if (actor.info.state() == rpc::ActorInfo::ALIVE && (newer || !actor.reachable)) actor.reachable = true;
  }
  FailLost(actor);  // whatever the GCS said, or did not: they wait no longer
  Pump(actor_id, actor);
  bool outstanding = !actor.waiting.empty() || !actor.in_flight.empty();
  if (!actor.watching && outstanding && actor.info.state() != rpc::ActorInfo::DEAD && !actor.reachable) {
    Watch(actor_id, actor);
  }
}

void ActorSubmitter::FailCall(const Call& call, rpc::ErrorType type, const std::string& message) {
  rpc::ObjectValue value;
  value.mutable_error()->set_type(type);
  value.mutable_error()->set_message(message);
  Complete(call.spec, std::move(value));
}

void ActorSubmitter::Complete(const rpc::TaskSpec& spec, rpc::ObjectValue value, MoreReturnValues more) {
  if (events_) {
    events_->RecordSpec(spec, value.has_error() ? rpc::FAILED : rpc::FINISHED, value.has_error() ? &value.error() : nullptr);
  }
  for (const auto& arg : spec.args()) {
    if (arg.has_ref()) objects_->RemoveTaskRef(ObjectID::FromBinary(arg.ref().object_id()));
  }
  for (const auto& ref : spec.inlined_refs()) objects_->RemoveLocalRef(ObjectID::FromBinary(ref.object_id()));
  SetReturnsReady(objects_, spec, std::move(value), std::move(more));
}

}  // namespace orb

#include "gcs/actor_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/call_stream_routes.h"
#include "common/id.h"
#include "common/unix_time.h"

namespace orb::gcs {
namespace {

constexpr char kActorTable[] = "actor";

std::string Short(const std::string& actor_id) { return ActorID::FromBinary(actor_id).Hex().substr(0, 12); }
// The IDs of an actor's log lines, as fields (see common/logging.h).
std::string Fields(const rpc::ActorInfo& actor) {
  std::string fields = "[actor_id=" + ActorID::FromBinary(actor.actor_id()).Hex() +
                       " job_id=" + JobID::FromBinary(actor.job_id()).Hex();
  if (!actor.address().worker_id().empty()) fields += " worker_id=" + WorkerID::FromBinary(actor.address().worker_id()).Hex();
  return fields + "]";
}

grpc::Status Invalid(const std::string& message) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message); }

}  // namespace

ActorManager::ActorManager(TableStore* store, EventLoop* loop, NodeDirectoryAccess nodes, ActorManagerOptions options)
    : store_(store),
      loop_(loop),
      nodes_(std::move(nodes)),
      options_(std::move(options)),
      raylets_(options_.token),
      workers_(options_.token),
      worker_streams_(options_.token),
      pusher_(&workers_, ControlCallStreamEnabled() ? &worker_streams_ : nullptr, ""),
      waiters_(
          loop,
          [](rpc::GetActorInfoReply* reply, const rpc::ActorInfo& actor) {
            reply->set_found(true);
            *reply->mutable_actor() = actor;
          },
          [this](const std::string& id) -> const rpc::ActorInfo* { return Find(id); }) {}

ActorManager::~ActorManager() {
  raylets_.Drain(std::chrono::seconds(2));
  workers_.Drain(std::chrono::seconds(2));
  worker_streams_.Drain(std::chrono::seconds(2));
}

absl::Status ActorManager::Load() {
  auto rows = store_->Scan(kActorTable, "");
  if (!rows.ok()) return rows.status();
  for (const auto& [key, value] : *rows) {
    rpc::ActorInfo actor;
    if (!actor.ParseFromString(value)) return absl::DataLossError("corrupt actor record in GCS storage");
    if (actor.state() != rpc::ActorInfo::DEAD) {
      if (!actor.name().empty()) named_[NameKey(actor.namespace_(), actor.name())] = actor.actor_id();
      if (actor.state() == rpc::ActorInfo::ALIVE) by_worker_[actor.address().worker_id()] = actor.actor_id();
    } else {
      dead_.push_back(actor.actor_id());
    }
    actors_[actor.actor_id()] = std::move(actor);
  }
  std::stable_sort(dead_.begin(), dead_.end(), [this](const std::string& a, const std::string& b) {
    return actors_[a].end_time_ms() < actors_[b].end_time_ms();
  });
  ForgetOldDead();
  return absl::OkStatus();
}

void ActorManager::Start() {
  std::vector<std::string> ids;
  for (const auto& [id, actor] : actors_) ids.push_back(id);
  for (const auto& id : ids) {
    rpc::ActorInfo* actor = Find(id);  // (an old dead one may have been forgotten meanwhile)
    if (!actor) continue;
    if (actor->state() == rpc::ActorInfo::PENDING_CREATION || actor->state() == rpc::ActorInfo::RESTARTING) {
      Schedule(id);
    } else if (actor->state() == rpc::ActorInfo::ALIVE && nodes_.raylet_of(actor->address().node_id()).empty()) {
      (void)OnFailure(*actor, "its node died while the GCS was down", rpc::ACTOR_DIED, true);
    }
  }
  VerifyAliveActors(kVerifyAttempts);
}

void ActorManager::VerifyAliveActors(int attempts_left) {
  // An actor whose worker died while this GCS was down was reported to nobody (or its
  // report is still being retried): ask each raylet which of its actors' workers run.
  std::map<std::string, std::vector<std::string>> workers_by_raylet;
  for (const auto& [id, actor] : actors_) {
    if (actor.state() != rpc::ActorInfo::ALIVE) continue;
    std::string raylet = nodes_.raylet_of(actor.address().node_id());
    if (!raylet.empty()) workers_by_raylet[raylet].push_back(actor.address().worker_id());
  }
  for (const auto& [raylet, workers] : workers_by_raylet) {
    rpc::CheckWorkersRequest request;
    for (const auto& w : workers) request.add_worker_ids(w);
    Raylet(raylet)->Call<rpc::CheckWorkersReply>(
        ORB_RPC(CheckWorkers), request,
        [this, attempts_left](const absl::Status& status, rpc::CheckWorkersReply&& reply) {
          loop_->Post([this, attempts_left, status, reply = std::move(reply)] {
            if (!status.ok()) {
              // The raylet may be restarting with the cluster; its death, if it is
              // dead, fails its actors anyway.
              if (attempts_left > 1) {
                loop_->RunAfter(kVerifyRetry, [this, attempts_left] { VerifyAliveActors(attempts_left - 1); });
              }
              return;
            }
            for (const auto& worker : reply.dead_worker_ids()) {
              auto it = by_worker_.find(worker);
              if (it == by_worker_.end()) continue;
              rpc::ActorInfo* actor = Find(it->second);
              if (actor && actor->state() == rpc::ActorInfo::ALIVE) {
                (void)OnFailure(*actor, "its worker died while the GCS was down", rpc::ACTOR_DIED, true);
              }
            }
          });
        });
  }
}

rpc::ActorInfo* ActorManager::Find(const std::string& actor_id) {
  auto it = actors_.find(actor_id);
  return it == actors_.end() ? nullptr : &it->second;
}

void ActorManager::HandleRegisterActor(const rpc::RegisterActorRequest& req, rpc::RegisterActorReply*,
                                       SendReply send) {
  const rpc::ActorInfo& in = req.actor();
  if (ActorID::FromBinary(in.actor_id()).IsNil()) return send(Invalid("actor_id must be 16 bytes"));
  if (in.creation_spec().function_name().empty()) return send(Invalid("the actor needs a factory (creation task)"));
  if (actors_.count(in.actor_id())) return send(grpc::Status::OK);  // a retried registration
  if (!in.name().empty() && named_.count(NameKey(in.namespace_(), in.name()))) {
    return send(grpc::Status(grpc::StatusCode::ALREADY_EXISTS, "an actor named '" + in.name() +
                                                                   "' already exists in namespace '" +
                                                                   in.namespace_() +
                                                                   "'. Please use a different name, or get the "
                                                                   "existing actor by its name"));
  }
  rpc::ActorInfo actor = in;
  actor.set_state(rpc::ActorInfo::PENDING_CREATION);
  actor.set_version(0);
  actor.set_num_restarts(0);
  actor.set_start_time_ms(UnixMillis());
  actor.clear_address();
  actor.clear_death_reason();
  if (auto s = store_->Put(kActorTable, actor.actor_id(), actor.SerializeAsString()); !s.ok()) return send(ToGrpc(s));
  if (!actor.name().empty()) named_[NameKey(actor.namespace_(), actor.name())] = actor.actor_id();
  std::string id = actor.actor_id();
  spdlog::info("actor {} ({}) registered {}", Short(id), actor.class_name(), Fields(actor));
  actors_[id] = std::move(actor);
  send(grpc::Status::OK);
  Schedule(id);
}

void ActorManager::Schedule(const std::string& actor_id) {
  rpc::ActorInfo* actor = Find(actor_id);
  if (!actor || actor->state() == rpc::ActorInfo::DEAD) return;
  uint64_t attempt = ++attempts_[actor_id];
  // As Ray's: an actor that holds no resources goes to the nodes in turn (Ray picks one at
  // random), so that many such actors spread over the cluster; one that does starts on its
  // caller's node, spilling over from there when that node is full.
  const rpc::TaskSpec& spec = actor->creation_spec();
  const rpc::SchedulingOptions& scheduling = spec.scheduling();
  bool anywhere = spec.resources().empty() && scheduling.strategy() == rpc::SchedulingOptions::DEFAULT &&
                  scheduling.placement_group_id().empty() && scheduling.label_selector().empty() &&
                  scheduling.soft_label_selector().empty();
  std::string raylet = anywhere ? "" : nodes_.raylet_of(spec.caller().node_id());
  if (raylet.empty()) raylet = nodes_.next_raylet();
  if (raylet.empty()) return RetryLater(actor_id, attempt);
  RequestLease(actor_id, attempt, raylet, /*spilled=*/false);
}

std::shared_ptr<RpcClient<rpc::RayletService>> ActorManager::Raylet(const std::string& address) {
  static const std::set<std::string, std::less<>> kRouted = {"RequestWorkerLease", "ReturnWorker", "CheckWorkers"};
  return GetRouted(raylets_, address, nodes_.call_stream_at ? nodes_.call_stream_at(address) : "", kRouted);
}

void ActorManager::RetryLater(const std::string& actor_id, uint64_t attempt) {
  loop_->RunAfter(options_.retry_delay, [this, actor_id, attempt] {
    if (attempts_[actor_id] == attempt) Schedule(actor_id);
  });
}

void ActorManager::RequestLease(const std::string& actor_id, uint64_t attempt, const std::string& raylet,
                                bool spilled) {
  const rpc::TaskSpec& spec = actors_[actor_id].creation_spec();
  rpc::RequestWorkerLeaseRequest request;
  request.set_job_id(spec.job_id());
  *request.mutable_resources() = spec.resources();
  request.set_scheduling_class("actor:" + actors_[actor_id].class_name());
  *request.mutable_scheduling() = spec.scheduling();
  request.set_runtime_env(spec.runtime_env());
  request.set_language(spec.language());
  request.set_grant_or_reject(spilled);
  request.set_retriable(actors_[actor_id].max_restarts() != 0);
  CallOptions options = CallOptions::UntilDone();  // a lease may queue until resources free up
  Raylet(raylet)->Call<rpc::RequestWorkerLeaseReply>(
      ORB_RPC(RequestWorkerLease), request,
      [this, actor_id, attempt, raylet](const absl::Status& status, rpc::RequestWorkerLeaseReply&& reply) {
        loop_->Post([this, actor_id, attempt, raylet, status, reply = std::move(reply)]() mutable {
          OnLeaseReply(actor_id, attempt, raylet, status, std::move(reply));
        });
      },
      options);
}

void ActorManager::OnLeaseReply(const std::string& actor_id, uint64_t attempt, const std::string& raylet,
                                const absl::Status& status, rpc::RequestWorkerLeaseReply reply) {
  rpc::ActorInfo* actor = Find(actor_id);
  bool current = actor && attempts_[actor_id] == attempt && actor->state() != rpc::ActorInfo::DEAD;
  if (!current) {
    if (status.ok() && !reply.lease_id().empty()) {  // granted too late: give it back
      rpc::ReturnWorkerRequest back;
      back.set_lease_id(reply.lease_id());
      back.set_worker_failed(true);
      Raylet(raylet)->Call<rpc::ReturnWorkerReply>(
          ORB_RPC(ReturnWorker), back, [](const absl::Status&, rpc::ReturnWorkerReply&&) {}, CallOptions::Retried());
    }
    return;
  }
  if (status.ok() && reply.rejected() && reply.error().type() == rpc::RUNTIME_ENV_ERROR) {
    // Its environment cannot be set up: retrying will not change that.
    (void)MarkDead(*actor, reply.error().message(), rpc::RUNTIME_ENV_ERROR);
    return;
  }
  if (!status.ok() || reply.rejected()) return RetryLater(actor_id, attempt);
  if (reply.error().type() == rpc::INFEASIBLE) {
    spdlog::warn("actor {} cannot be placed yet: {}", Short(actor_id), reply.error().message());
    return RetryLater(actor_id, attempt);
  }
  if (reply.has_retry_at_raylet()) {
    const rpc::Address& next = reply.retry_at_raylet();
    return RequestLease(actor_id, attempt, next.ip() + ":" + std::to_string(next.port()), /*spilled=*/true);
  }
  actor->set_raylet_address(raylet);
  actor->set_lease_id(reply.lease_id());
  *actor->mutable_address() = reply.worker_address();
  *actor->mutable_gpu_ids() = reply.gpu_ids();
  *actor->mutable_gpu_env() = reply.gpu_env();
  PushCreation(actor_id, attempt);
}

void ActorManager::PushCreation(const std::string& actor_id, uint64_t attempt) {
  rpc::ActorInfo& actor = actors_[actor_id];
  rpc::PushTasksRequest request;
  rpc::TaskSpec* spec = request.add_tasks();
  *spec = actor.creation_spec();
  spec->mutable_actor_creation()->set_restarted(actor.num_restarts() > 0);
  request.set_intended_worker_id(actor.address().worker_id());
  *request.mutable_gpu_ids() = actor.gpu_ids();
  *request.mutable_gpu_env() = actor.gpu_env();
  // As drivers push tasks: over the worker's call stream when it serves one.
  pusher_.Push(actor.address(), request, [this, actor_id, attempt](const absl::Status& status, rpc::PushTasksReply&& reply) {
    loop_->Post([this, actor_id, attempt, status, reply = std::move(reply)]() mutable {
      OnCreationReply(actor_id, attempt, status, std::move(reply));
    });
  });
}

void ActorManager::OnCreationReply(const std::string& actor_id, uint64_t attempt, const absl::Status& status,
                                   rpc::PushTasksReply reply) {
  rpc::ActorInfo* actor = Find(actor_id);
  if (!actor || attempts_[actor_id] != attempt || actor->state() == rpc::ActorInfo::DEAD) return;
  if (!status.ok()) {
    (void)OnFailure(*actor, "its worker died while running the constructor (" + std::string(status.message()) + ")",
                    rpc::ACTOR_DIED, true);
    return;
  }
  if (reply.results_size() == 1 && reply.results(0).value().has_error()) {
    const rpc::ErrorInfo& error = reply.results(0).value().error();
    bool retryable = error.type() == rpc::TASK_ERROR;  // a missing factory stays missing
    // As in Ray, an actor whose constructor failed is a dead actor (ActorDiedError), and
    // the reason carries the constructor's error.
    (void)OnFailure(*actor, "the constructor failed: " + error.message(), rpc::ACTOR_DIED, retryable);
    return;
  }
  actor->set_state(rpc::ActorInfo::ALIVE);
  by_worker_[actor->address().worker_id()] = actor_id;
  spdlog::info("actor {} ({}) alive on {}:{}{} {}", Short(actor_id), actor->class_name(), actor->address().ip(),
               actor->address().port(), actor->num_restarts() > 0 ? " (restarted)" : "", Fields(*actor));
  (void)Changed(*actor);
}

void ActorManager::ReleaseWorker(rpc::ActorInfo& actor) {
  by_worker_.erase(actor.address().worker_id());
  if (!actor.lease_id().empty() && !actor.raylet_address().empty()) {
    rpc::ReturnWorkerRequest back;
    back.set_lease_id(actor.lease_id());
    back.set_worker_failed(true);  // the raylet kills the worker: no actor state survives
    Raylet(actor.raylet_address())
        ->Call<rpc::ReturnWorkerReply>(
            ORB_RPC(ReturnWorker), back, [](const absl::Status&, rpc::ReturnWorkerReply&&) {}, CallOptions::Retried());
  }
  actor.clear_lease_id();
  actor.clear_raylet_address();
  actor.clear_address();
  actor.clear_gpu_ids();
  actor.clear_gpu_env();
}

absl::Status ActorManager::OnFailure(rpc::ActorInfo& actor, const std::string& reason, rpc::ErrorType type,
                                     bool may_restart) {
  if (actor.state() == rpc::ActorInfo::DEAD) return absl::OkStatus();
  ReleaseWorker(actor);
  bool restarts_left = actor.max_restarts() < 0 || actor.num_restarts() < actor.max_restarts();
  if (!may_restart || !restarts_left) return MarkDead(actor, reason, type);
  actor.set_num_restarts(actor.num_restarts() + 1);
  actor.set_state(rpc::ActorInfo::RESTARTING);
  spdlog::warn("actor {} ({}) failed: {}; restarting ({} of {}) {}", Short(actor.actor_id()), actor.class_name(), reason,
               actor.num_restarts(), actor.max_restarts() < 0 ? std::string("unlimited") : std::to_string(actor.max_restarts()),
               Fields(actor));
  absl::Status persisted = Changed(actor);
  Schedule(actor.actor_id());
  return persisted;
}

absl::Status ActorManager::MarkDead(rpc::ActorInfo& actor, const std::string& reason, rpc::ErrorType type) {
  ReleaseWorker(actor);
  ++attempts_[actor.actor_id()];  // scheduling in progress is void
  actor.set_state(rpc::ActorInfo::DEAD);
  actor.set_death_reason(reason);
  actor.set_death_error(type);
  actor.set_end_time_ms(UnixMillis());
  if (!actor.name().empty()) {
    auto it = named_.find(NameKey(actor.namespace_(), actor.name()));
    if (it != named_.end() && it->second == actor.actor_id()) named_.erase(it);
  }
  spdlog::info("actor {} ({}) is dead: {} {}", Short(actor.actor_id()), actor.class_name(), reason, Fields(actor));
  absl::Status persisted = Changed(actor);
  dead_.push_back(actor.actor_id());
  ForgetOldDead();  // never `actor` itself: it is the newest, and at least one is kept
  return persisted;
}

void ActorManager::ForgetOldDead() {
  while (dead_.size() > std::max<size_t>(1, options_.max_dead_actors)) {
    std::string id = dead_.front();
    dead_.pop_front();
    if (auto s = store_->Delete(kActorTable, id); !s.ok()) {
      spdlog::warn("cannot forget dead actor {}: {}", Short(id), s.ToString());
      dead_.push_front(id);  // kept; tried again after the next death
      return;
    }
    actors_.erase(id);
    attempts_.erase(id);
  }
}

absl::Status ActorManager::Changed(rpc::ActorInfo& actor) {
  actor.set_version(actor.version() + 1);
  absl::Status persisted = store_->Put(kActorTable, actor.actor_id(), actor.SerializeAsString());
  if (!persisted.ok()) spdlog::error("cannot persist actor {}: {}", Short(actor.actor_id()), persisted.ToString());
  waiters_.Notify(actor.actor_id(), actor);
  return persisted;
}

void ActorManager::HandleGetActorInfo(const rpc::GetActorInfoRequest& req, rpc::GetActorInfoReply* reply,
                                      SendReply send) {
  rpc::ActorInfo* actor = Find(req.actor_id());
  if (!actor) {
    reply->set_found(false);
    return send(grpc::Status::OK);
  }
  int64_t after = req.after_version();
  auto moved_on = [after](const rpc::ActorInfo& a) {
    return a.version() > after || a.state() == rpc::ActorInfo::DEAD;
  };
  waiters_.Answer(req.actor_id(), *actor, moved_on, reply, std::move(send),
                  std::chrono::milliseconds(req.wait_ms()));
}

void ActorManager::HandleGetNamedActor(const rpc::GetNamedActorRequest& req, rpc::GetNamedActorReply* reply,
                                       SendReply send) {
  auto it = named_.find(NameKey(req.namespace_(), req.name()));
  reply->set_found(it != named_.end());
  if (it != named_.end()) *reply->mutable_actor() = actors_[it->second];
  send(grpc::Status::OK);
}

void ActorManager::HandleKillActor(const rpc::KillActorRequest& req, rpc::KillActorReply*, SendReply send) {
  rpc::ActorInfo* actor = Find(req.actor_id());
  if (!actor) return send(grpc::Status(grpc::StatusCode::NOT_FOUND, "no actor " + ActorID::FromBinary(req.actor_id()).Hex()));
  std::string reason = req.reason().empty() ? "killed by ActorHandle::Kill()" : req.reason();
  absl::Status persisted;
  if (req.no_restart()) {
    if (actor->state() != rpc::ActorInfo::DEAD) persisted = MarkDead(*actor, reason, rpc::ACTOR_DIED);
  } else {
    persisted = OnFailure(*actor, reason, rpc::ACTOR_DIED, true);
  }
  send(ToGrpc(persisted));
}

void ActorManager::HandleRelocateActors(const rpc::RelocateActorsRequest& req, rpc::RelocateActorsReply* reply,
                                        SendReply send) {
  std::vector<rpc::ActorInfo*> moving;
  for (const auto& worker : req.worker_ids()) {
    auto it = by_worker_.find(worker);
    rpc::ActorInfo* actor = it == by_worker_.end() ? nullptr : Find(it->second);
    if (!actor) {
      reply->add_refused("worker " + WorkerID::FromBinary(worker).Hex() + " hosts no actor this GCS knows (yet)");
    } else if (actor->state() != rpc::ActorInfo::ALIVE) {
      reply->add_refused("actor " + Short(actor->actor_id()) + " (" + actor->class_name() + ") is " +
                         rpc::ActorInfo::State_Name(actor->state()));
    } else if (actor->max_restarts() == 0) {
      reply->add_refused("actor " + Short(actor->actor_id()) + " (" + actor->class_name() +
                         ") has max_restarts=0: restarting it elsewhere would lose its state");
    } else {
      moving.push_back(actor);
    }
  }
  if (reply->refused_size() > 0) return send(grpc::Status::OK);
  absl::Status persisted;
  for (rpc::ActorInfo* actor : moving) {
    // Not a failure: its restarts are not spent.
    ReleaseWorker(*actor);
    actor->set_state(rpc::ActorInfo::RESTARTING);
    spdlog::info("actor {} ({}) restarts on another node: its node {} is leaving ({}) {}", Short(actor->actor_id()),
                 actor->class_name(), NodeID::FromBinary(req.node_id()).Hex(), req.reason(), Fields(*actor));
    absl::Status changed = Changed(*actor);
    if (!changed.ok()) persisted = changed;
    Schedule(actor->actor_id());
  }
  reply->set_relocated(static_cast<int>(moving.size()));
  send(ToGrpc(persisted));
}

void ActorManager::HandleListActors(const rpc::ListActorsRequest&, rpc::ListActorsReply* reply, SendReply send) {
  for (const auto& [id, actor] : actors_) {
    rpc::ActorInfo* out = reply->add_actors();
    *out = actor;
    out->clear_creation_spec();  // arguments can be large; not for listing
  }
  send(grpc::Status::OK);
}

std::string ActorManager::ClassOfWorker(const std::string& worker_id) const {
  auto it = by_worker_.find(worker_id);
  if (it == by_worker_.end()) return "";
  auto actor = actors_.find(it->second);
  return actor == actors_.end() ? "" : actor->second.class_name();
}

std::map<std::string, int64_t> ActorManager::CountByState() const {
  std::map<std::string, int64_t> counts;
  for (int s = rpc::ActorInfo::State_MIN; s <= rpc::ActorInfo::State_MAX; ++s) {
    counts[rpc::ActorInfo::State_Name(static_cast<rpc::ActorInfo::State>(s))] = 0;
  }
  for (const auto& [id, actor] : actors_) ++counts[rpc::ActorInfo::State_Name(actor.state())];
  return counts;
}

void ActorManager::HandleReportWorkerFailure(const rpc::ReportWorkerFailureRequest& req,
                                             rpc::ReportWorkerFailureReply*, SendReply send) {
  auto it = by_worker_.find(req.worker_id());
  if (it != by_worker_.end()) {
    rpc::ActorInfo* actor = Find(it->second);
    // Not recorded: the raylet is told so and reports again.
    if (actor) {
      absl::Status recorded = OnFailure(*actor, "its worker process died (" + req.reason() + ")", rpc::ACTOR_DIED, true);
      if (!recorded.ok()) return send(ToGrpc(recorded));
    }
  }
  send(ToGrpc(EndOrphansOf(req.worker_id())));
}

absl::Status ActorManager::EndOrphansOf(const std::string& worker_id) {
  std::vector<std::string> orphans;
  for (const auto& [id, actor] : actors_) {
    if (!actor.detached() && actor.state() != rpc::ActorInfo::DEAD &&
        actor.creation_spec().caller().worker_id() == worker_id) {
      orphans.push_back(id);
    }
  }
  absl::Status recorded;
  for (const auto& id : orphans) {
    recorded.Update(MarkDead(actors_[id], "its owner (the worker that created it) died", rpc::ACTOR_DIED));
  }
  return recorded;
}

void ActorManager::OnNodeDead(const std::string& node_id) {
  std::vector<std::string> affected;
  for (const auto& [id, actor] : actors_) {
    if (actor.state() == rpc::ActorInfo::ALIVE && actor.address().node_id() == node_id) affected.push_back(id);
  }
  for (const auto& id : affected) {
    // The lease died with the raylet: nothing to give back.
    actors_[id].clear_lease_id();
    (void)OnFailure(actors_[id], "its node died", rpc::ACTOR_DIED, true);
  }
}

void ActorManager::OnJobFinished(const std::string& job_id) {
  std::vector<std::string> owned;
  for (const auto& [id, actor] : actors_) {
    if (actor.job_id() == job_id && !actor.detached() && actor.state() != rpc::ActorInfo::DEAD) owned.push_back(id);
  }
  for (const auto& id : owned) (void)MarkDead(actors_[id], "its owner (the job's driver) exited", rpc::ACTOR_DIED);
}

void ActorManager::OnPlacementGroupRemoved(const std::string& placement_group_id) {
  std::vector<std::string> inside;
  for (const auto& [id, actor] : actors_) {
    if (actor.creation_spec().scheduling().placement_group_id() == placement_group_id &&
        actor.state() != rpc::ActorInfo::DEAD) {
      inside.push_back(id);
    }
  }
  for (const auto& id : inside) (void)MarkDead(actors_[id], "its placement group was removed", rpc::ACTOR_DIED);
}

}  // namespace orb::gcs

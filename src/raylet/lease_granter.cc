#include "raylet/lease_granter.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace orb {

LeaseGranter::LeaseGranter(ResourceSet total, WorkerSupply* pool, JobFetcher fetch_job, EventLoop* loop,
                           LeaseGranterOptions options, NodeTypeFetcher fetch_node_types)
    : total_(total), available_(total), pool_(pool), fetch_job_(std::move(fetch_job)),
      fetch_node_types_(std::move(fetch_node_types)), loop_(loop),
      options_(std::move(options)), scheduler_(options_.hybrid, options_.node_id.Hash()),
      gpus_(static_cast<size_t>(std::max(0.0, total.Get("GPU")))) {}

std::vector<LeaseSummary> LeaseGranter::Leases() const {
  std::vector<LeaseSummary> out;
  out.reserve(leases_.size());
  for (const auto& [id, lease] : leases_) out.push_back({lease.worker, lease.resources, lease.granted_at, lease.retriable});
  return out;
}

namespace {

rpc::RequestWorkerLeaseReply Rejection(rpc::ErrorType type, const std::string& message) {
  rpc::RequestWorkerLeaseReply reply;
  reply.set_rejected(true);
  reply.mutable_error()->set_type(type);
  reply.mutable_error()->set_message(message);
  return reply;
}

absl::StatusOr<SchedulingRequest> ToSchedulingRequest(const rpc::RequestWorkerLeaseRequest& request) {
  std::map<std::string, double> amounts(request.resources().begin(), request.resources().end());
  if (auto s = ResourceSet::Validate(amounts); !s.ok()) return s;
  if (auto gpu = amounts.find("GPU"); gpu != amounts.end()) {
    if (std::string why = CheckGpuRequest(gpu->second); !why.empty()) return absl::InvalidArgumentError(why);
  }
  SchedulingRequest out;
  out.resources = ResourceSet::FromMap(amounts);
  const auto& options = request.scheduling();
  switch (options.strategy()) {
    case rpc::SchedulingOptions::SPREAD:
      out.strategy = SchedulingStrategy::kSpread;
      break;
    case rpc::SchedulingOptions::NODE_AFFINITY:
      out.strategy = SchedulingStrategy::kNodeAffinity;
      out.affinity_node = NodeID::FromBinary(options.affinity_node_id());
      out.affinity_soft = options.affinity_soft();
      if (out.affinity_node.IsNil()) return absl::InvalidArgumentError("node affinity without a valid node ID");
      break;
    default:
      break;
  }
  auto hard = LabelSelector::Parse(options.label_selector());
  if (!hard.ok()) return hard.status();
  auto soft = LabelSelector::Parse(options.soft_label_selector());
  if (!soft.ok()) return soft.status();
  out.hard_labels = *hard;
  out.soft_labels = *soft;
  return out;
}

// What a lease lends back while its worker is blocked in Get: its CPU, plain and in a
// placement group's bundles ("CPU_group_..."), so that the tasks it waits for can run
// there too. GPUs, memory and custom resources stay with the task.
ResourceSet LentWhileBlocked(const ResourceSet& held) {
  ResourceSet cpu;
  for (const auto& [name, amount] : held.ToMap()) {
    if (name == "CPU" || name.rfind("CPU_group_", 0) == 0) cpu.Set(name, amount);
  }
  return cpu;
}

}  // namespace

void LeaseGranter::UpdateClusterView(std::vector<NodeView> remote_nodes) {
  std::vector<NodeView> nodes;
  nodes.reserve(remote_nodes.size() + 1);
  for (auto& n : remote_nodes) {
    if (n.id != options_.node_id) nodes.push_back(std::move(n));
  }
  view_ = ClusterView(options_.node_id, std::move(nodes));
  reservations_.clear();  // the nodes' own figures now count what was sent to them
  PlaceQueuedAgain();
}

void LeaseGranter::ReserveInView(const NodeID& node, const ResourceSet& resources) {
  view_.Reserve(node, resources);
  reservations_.push_back({node, resources, std::chrono::steady_clock::now() + options_.view_reservation_ttl});
  if (!reservation_timer_set_) {
    reservation_timer_set_ = true;
    loop_->RunAfter(options_.view_reservation_ttl, [this] { ExpireReservations(); });
  }
}

void LeaseGranter::ExpireReservations() {
  reservation_timer_set_ = false;
  auto now = std::chrono::steady_clock::now();
  bool expired = false;
  // A node whose figures did not change since (it granted and finished the work before
  // its next gossip round) shows its room again.
  while (!reservations_.empty() && reservations_.front().expires <= now) {
    view_.Unreserve(reservations_.front().node, reservations_.front().resources);
    reservations_.pop_front();
    expired = true;
  }
  if (expired) PlaceQueuedAgain();
  if (!reservations_.empty()) {
    reservation_timer_set_ = true;
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(reservations_.front().expires - now);
    loop_->RunAfter(std::max(wait, std::chrono::milliseconds(1)), [this] { ExpireReservations(); });
  }
}

void LeaseGranter::PlaceQueuedAgain() {
  // Requests that this node can serve now keep their place (in queue order); each of the
  // others goes to another node that has room for it now, if one does. Requests sent
  // here by another raylet move too: the node that joined after they were placed is
  // where they should run.
  ResourceSet room = draining_ ? ResourceSet() : available_;
  // Plain shapes that found no room elsewhere in this pass (room only shrinks during
  // it): requests of the same shape further back are skipped without a decision.
  std::vector<ResourceSet> nowhere;
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (room.Contains(it->resources) && LocallyFeasible(it->scheduling)) {
      room.Subtract(it->resources);
      ++it;
      continue;
    }
    const SchedulingRequest& request = it->scheduling;
    bool plain = request.strategy != SchedulingStrategy::kNodeAffinity && request.hard_labels.empty() &&
                 request.soft_labels.empty() && request.argument_bytes.empty();
    if (plain && std::find(nowhere.begin(), nowhere.end(), it->resources) != nowhere.end()) {
      ++it;
      continue;
    }
    SchedulingDecision decision = scheduler_.Schedule(request, CurrentView());
    if (decision.kind != SchedulingDecision::Kind::kNode || decision.node->id == options_.node_id) {
      if (plain && nowhere.size() < 8) nowhere.push_back(it->resources);
      ++it;
      continue;
    }
    ++stats_.replaced;
    auto reply = SpillTo(*decision.node);
    ReserveInView(decision.node->id, it->resources);
    auto callback = std::move(it->callback);
    it = EraseQueued(it);
    callback(std::move(reply));
  }
}

bool LeaseGranter::CancelRequest(const WorkerID& requester, uint64_t request_id) {
  if (request_id == 0) return false;
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->request_id != request_id || it->requester != requester) continue;
    ++stats_.canceled;
    rpc::RequestWorkerLeaseReply reply;
    reply.set_rejected(true);
    reply.set_canceled(true);
    auto callback = std::move(it->callback);
    EraseQueued(it);
    callback(std::move(reply));
    return true;
  }
  return false;
}

const ClusterView& LeaseGranter::CurrentView() {
  NodeView local;
  local.id = options_.node_id;
  local.address = options_.node_ip + ":" + std::to_string(options_.node_port);
  // A draining node offers nothing, so requests go elsewhere.
  local.total = draining_ ? ResourceSet() : total_;
  // Requests already queued here will take their share: count them as used, or a burst
  // of requests would all see an idle node and all stay here.
  local.available = draining_ ? ResourceSet() : available_;
  local.available.Subtract(queued_resources_);
  local.labels = options_.labels;
  local.draining = draining_;
  view_.Upsert(std::move(local));
  return view_;
}

bool LeaseGranter::LocallyFeasible(const SchedulingRequest& request) const {
  if (draining_ || !total_.Contains(request.resources)) return false;
  if (!request.hard_labels.empty() && !request.hard_labels.Matches(options_.labels)) return false;
  if (request.strategy == SchedulingStrategy::kNodeAffinity && !request.affinity_soft &&
      request.affinity_node != options_.node_id) {
    return false;
  }
  return true;
}

ResourceSet LeaseGranter::ResourcesLeasedTo(const WorkerID& worker) const {
  auto it = lease_of_worker_.find(worker);
  if (it == lease_of_worker_.end()) return ResourceSet();
  auto lease = leases_.find(it->second);
  return lease == leases_.end() ? ResourceSet() : lease->second.resources;
}

rpc::RequestWorkerLeaseReply LeaseGranter::Infeasible(const ResourceSet& shape, const std::string& why) {
  ++stats_.infeasible;
  ++stats_.infeasible_shapes[shape.ToString()];
  return Rejection(rpc::INFEASIBLE, why);
}

rpc::RequestWorkerLeaseReply LeaseGranter::SpillTo(const NodeView& node) {
  ++stats_.spilled;
  rpc::RequestWorkerLeaseReply reply;
  auto colon = node.address.rfind(':');
  auto* target = reply.mutable_retry_at_raylet();
  target->set_ip(node.address.substr(0, colon));
  target->set_port(std::atoi(node.address.c_str() + colon + 1));
  target->set_node_id(node.id.Binary());
  return reply;
}

void LeaseGranter::RequestLease(const rpc::RequestWorkerLeaseRequest& request, LeaseCallback callback) {
  ++stats_.requests;
  auto scheduling = ToSchedulingRequest(request);
  if (!scheduling.ok()) {
    ++stats_.infeasible;
    return callback(Rejection(rpc::INFEASIBLE, std::string(scheduling.status().message())));
  }
  spdlog::debug("lease request for job {} shape {}", JobID::FromBinary(request.job_id()).Hex(),
                scheduling->resources.ToString());
  PendingLease pending{next_seq_++, JobID::FromBinary(request.job_id()), scheduling->resources,
                       std::move(callback), WorkerID::FromBinary(request.requester_worker_id()), *scheduling};
  pending.spilled_here = request.grant_or_reject();
  pending.worker_kind = WorkerKind{request.runtime_env(), request.language()};
  pending.retriable = request.retriable();
  pending.request_id = request.lease_request_id();
  if (request.grant_or_reject()) {
    // Sent here by another raylet: serve it here, or send it back to be scheduled again.
    if (!LocallyFeasible(pending.scheduling)) return pending.callback(Rejection(rpc::ERROR_NONE, "node changed"));
  } else {
    SchedulingDecision decision = scheduler_.Schedule(pending.scheduling, CurrentView());
    bool local = decision.node && decision.node->id == options_.node_id;
    spdlog::debug("scheduled {}: decision {} on {}", pending.resources.ToString(), static_cast<int>(decision.kind),
                  decision.node ? decision.node->id.Hex().substr(0, 8) : "-");
    switch (decision.kind) {
      case SchedulingDecision::Kind::kNode:
      case SchedulingDecision::Kind::kWait:
        if (!local && decision.node) {
          auto reply = SpillTo(*decision.node);
          ReserveInView(decision.node->id, pending.resources);
          return pending.callback(std::move(reply));
        }
        break;
      case SchedulingDecision::Kind::kInfeasible:
        if (decision.node_gone) return pending.callback(Infeasible(pending.resources, decision.reason));
        uint64_t seq = pending.seq;
        loop_->RunAfter(options_.infeasible_grace, [this, seq] { RejectInfeasible(seq); });
        break;
    }
  }
  EnsureJobInfo(pending.job);
  queued_resources_.Add(pending.resources);
  queue_.push_back(std::move(pending));
  Dispatch();
}

void LeaseGranter::RejectInfeasible(uint64_t seq) {
  if (!fetch_node_types_) return DecideInfeasible(seq, {});
  fetch_node_types_([this, seq](std::vector<NodeType> types) {
    loop_->Post([this, seq, types = std::move(types)] { DecideInfeasible(seq, types); });
  });
}

void LeaseGranter::DecideInfeasible(uint64_t seq, const std::vector<NodeType>& types) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->seq != seq) continue;
    if (LocallyFeasible(it->scheduling)) return;  // the node grew meanwhile
    SchedulingDecision decision = scheduler_.Schedule(it->scheduling, CurrentView());
    rpc::RequestWorkerLeaseReply reply;
    if (decision.kind == SchedulingDecision::Kind::kInfeasible || !decision.node) {
      const SchedulingRequest& request = it->scheduling;
      // A new node cannot serve hard affinity to an existing one.
      bool pinned = request.strategy == SchedulingStrategy::kNodeAffinity && !request.affinity_soft;
      const NodeType* type = pinned ? nullptr : FindLaunchableType(types, request.resources, [&](const auto& labels) {
        return request.hard_labels.Matches(labels);
      });
      if (type) {
        // A node the autoscaler may add could run it: wait for one, and look again later.
        if (!it->warned_waiting) {
          spdlog::warn("a task or actor asking for {} cannot be scheduled right now: no node has it, but the "
                       "autoscaler may add a node of type '{}'. It waits for one (ignore this if the cluster is "
                       "expected to scale up).",
                       it->resources.ToString(), type->name);
          it->warned_waiting = true;
        }
        loop_->RunAfter(options_.infeasible_grace, [this, seq] { RejectInfeasible(seq); });
        return;
      }
      std::string why = decision.reason.empty() ? "no node can satisfy " + it->resources.ToString() : decision.reason;
      if (!types.empty()) why += ", and no node type the autoscaler may launch could";
      reply = Infeasible(it->resources, why);
    } else if (decision.kind == SchedulingDecision::Kind::kNode) {
      // A node with room joined during the grace period.
      reply = SpillTo(*decision.node);
      ReserveInView(decision.node->id, it->resources);
    } else {
      // Nodes that could run it exist but are busy: it waits here, and moves to the
      // first of them that has room (PlaceQueuedAgain); it is looked at again later in
      // case they all go.
      loop_->RunAfter(options_.infeasible_grace, [this, seq] { RejectInfeasible(seq); });
      return;
    }
    auto callback = std::move(it->callback);
    EraseQueued(it);
    callback(std::move(reply));
    return;
  }
}

void LeaseGranter::EnsureJobInfo(const JobID& job) {
  if (jobs_.count(job) || fetching_.count(job) || job_errors_.count(job)) return;
  fetching_.insert(job);
  spdlog::debug("fetching job {} from the GCS", job.Hex());
  fetch_job_(job, [this, job](absl::StatusOr<rpc::JobInfo> info) {
    spdlog::debug("job {} fetched: {}", job.Hex(), info.status().ToString());
    loop_->Post([this, job, info = std::move(info)] {
      fetching_.erase(job);
      if (info.ok()) {
        jobs_[job] = *info;
      } else {
        spdlog::warn("cannot get job {}: {}", job.Hex(), info.status().ToString());
        job_errors_[job] = std::string(info.status().message());
        // A transient failure: allow a later request to try again.
        loop_->RunAfter(std::chrono::milliseconds(1000), [this, job] { job_errors_.erase(job); });
      }
      Dispatch();
    });
  });
}

void LeaseGranter::Grant(PendingLease& pending, WorkerProcess* worker) {
  LeaseID id = LeaseID::FromRandom();
  ++stats_.granted;
  available_.Subtract(pending.resources);
  double gpus = pending.resources.Get("GPU");
  Lease& lease = leases_[id];
  lease = Lease{worker->id, pending.resources, pending.requester, false,
                gpus_.Allocate(gpus).value_or(GpuGrant{}), std::chrono::steady_clock::now(), pending.retriable};
  worker->held_by_gcs = pending.requester.IsNil();
  worker->ran_tasks |= !worker->held_by_gcs;
  lease_of_worker_[worker->id] = id;
  spdlog::debug("lease {} granted: worker {} with {}", id.Hex().substr(0, 8), worker->id.Hex().substr(0, 8),
                pending.resources.ToString());
  rpc::RequestWorkerLeaseReply reply;
  reply.set_lease_id(id.Binary());
  for (int gpu : lease.gpus.ids) reply.add_gpu_ids(gpu);
  for (auto& [name, value] : GpuEnv(gpus, pending.resources.Get("GPU_memory"), lease.gpus.ids.size(), options_.gpu_mps)) {
    (*reply.mutable_gpu_env())[name] = std::move(value);
  }
  if (on_grant_) on_grant_(*worker, pending.resources);
  auto* address = reply.mutable_worker_address();
  address->set_ip(options_.node_ip);
  address->set_port(worker->port);
  address->set_unix_socket(worker->unix_socket);
  address->set_call_socket(worker->call_socket);
  address->set_call_port(worker->call_port);
  address->set_worker_id(worker->id.Binary());
  address->set_node_id(options_.node_id.Binary());
  pending.callback(std::move(reply));
}

std::deque<LeaseGranter::PendingLease>::iterator LeaseGranter::EraseQueued(std::deque<PendingLease>::iterator it) {
  queued_resources_.Subtract(it->resources);
  return queue_.erase(it);
}

void LeaseGranter::Dispatch() {
  std::unordered_map<std::string, int> waiting_for_worker;  // by job and environment
  // What requests waiting for a worker have not yet claimed: a worker is started only
  // for a request that would fit once it is up, so a burst of requests (most of which
  // their requester may cancel) starts no more workers than the node could run.
  ResourceSet unclaimed = available_;
  // Shapes found not to fit in this pass: resources only shrink during it, so requests
  // of the same shape further back are skipped with one comparison.
  std::vector<ResourceSet> no_room;
  for (auto it = queue_.begin(); it != queue_.end();) {
    PendingLease& pending = *it;
    bool known_no_room = std::any_of(no_room.begin(), no_room.end(),
                                     [&](const ResourceSet& shape) { return shape == pending.resources; });
    if (known_no_room || !available_.Contains(pending.resources)) {
      if (!known_no_room && no_room.size() < 8) no_room.push_back(pending.resources);
      ++it;
      continue;
    }
    // The sum of the GPUs may hold it while no single GPU has the fraction free.
    if (!LocallyFeasible(pending.scheduling) || !gpus_.Fits(pending.resources.Get("GPU"))) {
      ++it;
      continue;
    }
    auto job = jobs_.find(pending.job);
    if (job == jobs_.end()) {
      EnsureJobInfo(pending.job);
      ++it;
      continue;
    }
    if (WorkerProcess* worker = pool_->PopIdle(pending.job, pending.worker_kind, pending.requester.IsNil())) {
      unclaimed.Subtract(pending.resources);
      Grant(pending, worker);
      it = EraseQueued(it);
      continue;
    }
    if (!unclaimed.Contains(pending.resources)) {
      ++it;
      continue;
    }
    unclaimed.Subtract(pending.resources);
    int wanted = ++waiting_for_worker[pending.job.Binary() + pending.worker_kind.Key()];
    if (pool_->NumStarting(pending.job, pending.worker_kind) < wanted &&
        pool_->NumStartingTotal() < pool_->max_starting()) {
      if (auto s = pool_->StartWorker(job->second, pending.worker_kind); !s.ok()) {
        rpc::RequestWorkerLeaseReply reply;
        reply.set_rejected(true);
        // A bad environment stays bad; other failures (no executable...) fail the work too.
        bool bad_env = s.code() == absl::StatusCode::kFailedPrecondition;
        reply.mutable_error()->set_type(bad_env ? rpc::RUNTIME_ENV_ERROR : rpc::WORKER_CRASHED);
        reply.mutable_error()->set_message((bad_env ? "cannot set up the runtime environment on node " +
                                                          options_.node_id.Hex().substr(0, 12) + ": "
                                                    : std::string("cannot start a worker: ")) +
                                           std::string(s.message()));
        auto callback = std::move(pending.callback);
        it = EraseQueued(it);
        callback(std::move(reply));
        continue;
      }
    }
    ++it;
  }
}

ResourceSet LeaseGranter::HeldBy(const Lease& lease) {
  ResourceSet held = lease.resources;
  if (lease.blocked) held.Subtract(LentWhileBlocked(lease.resources));
  return held;
}

WorkerID LeaseGranter::WorkerOfLease(const LeaseID& lease_id) const {
  auto it = leases_.find(lease_id);
  if (it != leases_.end()) return it->second.worker;
  for (const auto& [lease, worker] : ended_by_death_) {
    if (lease == lease_id) return worker;
  }
  return WorkerID();
}

void LeaseGranter::ReturnLease(const LeaseID& lease_id, bool worker_failed, bool worker_exiting) {
  auto it = leases_.find(lease_id);
  spdlog::debug("lease {} returned{}", lease_id.Hex().substr(0, 8), worker_failed ? " (worker failed)" : "");
  if (it == leases_.end()) return;  // already released (the worker died first)
  Lease lease = it->second;
  leases_.erase(it);
  lease_of_worker_.erase(lease.worker);
  available_.Add(HeldBy(lease));
  gpus_.Release(lease.gpus);
  if (worker_failed) {
    pool_->Kill(lease.worker);
  } else if (worker_exiting) {
    pool_->Retire(lease.worker);
  } else {
    pool_->PushIdle(lease.worker);
  }
  Dispatch();
}

bool LeaseGranter::Reserve(const ResourceSet& resources) {
  if (!available_.Contains(resources)) return false;
  available_.Subtract(resources);
  return true;
}

void LeaseGranter::Unreserve(const ResourceSet& resources) {
  available_.Add(resources);
  Dispatch();
}

void LeaseGranter::AddCapacity(const ResourceSet& resources) {
  total_.Add(resources);
  available_.Add(resources);
  Dispatch();
}

void LeaseGranter::RemoveCapacity(const ResourceSet& resources) {
  total_.Subtract(resources);
  available_.Subtract(resources);
}

int LeaseGranter::KillLeasesHolding(const std::string& fragment) {
  std::vector<LeaseID> doomed;
  for (const auto& [id, lease] : leases_) {
    for (const auto& [name, amount] : lease.resources.ToMap()) {
      if (name.find(fragment) != std::string::npos) {
        doomed.push_back(id);
        break;
      }
    }
  }
  for (const auto& id : doomed) ReturnLease(id, /*worker_failed=*/true);
  return static_cast<int>(doomed.size());
}

void LeaseGranter::SetBlocked(const WorkerID& worker, bool blocked) {
  auto lid = lease_of_worker_.find(worker);
  if (lid == lease_of_worker_.end()) return;
  Lease& lease = leases_[lid->second];
  if (lease.blocked == blocked) return;
  lease.blocked = blocked;
  ResourceSet cpu = LentWhileBlocked(lease.resources);
  if (blocked) {
    available_.Add(cpu);
    Dispatch();
  } else {
    available_.Subtract(cpu);
  }
}

void LeaseGranter::OnJobFinished(const JobID& job) {
  int reclaimed = 0;
  for (auto it = leases_.begin(); it != leases_.end();) {
    const WorkerProcess* worker = pool_->Find(it->second.worker);
    if (!worker || worker->job != job || worker->held_by_gcs) {
      ++it;
      continue;
    }
    available_.Add(HeldBy(it->second));
    gpus_.Release(it->second.gpus);
    lease_of_worker_.erase(it->second.worker);
    pool_->Kill(it->second.worker);
    it = leases_.erase(it);
    ++reclaimed;
  }
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->job != job) {
      ++it;
      continue;
    }
    rpc::RequestWorkerLeaseReply reply;
    reply.set_rejected(true);
    reply.mutable_error()->set_type(rpc::WORKER_CRASHED);
    reply.mutable_error()->set_message("job " + job.Hex() + " has finished");
    auto callback = std::move(it->callback);
    it = EraseQueued(it);
    callback(std::move(reply));
  }
  if (reclaimed > 0) {
    spdlog::info("job {} finished: reclaimed {} lease(s) it left here [job_id={}]", job.Hex(), reclaimed, job.Hex());
  }
  pool_->StopWorkersOf(job);
  Dispatch();
}

void LeaseGranter::OnWorkerDeath(const WorkerProcess& worker) {
  auto lid = lease_of_worker_.find(worker.id);
  if (lid != lease_of_worker_.end()) {
    auto it = leases_.find(lid->second);
    if (it != leases_.end()) {
      available_.Add(HeldBy(it->second));
      gpus_.Release(it->second.gpus);
      leases_.erase(it);
    }
    ended_by_death_.emplace_back(lid->second, worker.id);
    if (ended_by_death_.size() > kRecentDeaths) ended_by_death_.pop_front();
    lease_of_worker_.erase(lid);
  }
  ReclaimFromRequester(worker.id, worker.job);
}

void LeaseGranter::ReclaimFromRequester(const WorkerID& requester, const JobID& job) {
  if (requester.IsNil()) return Dispatch();  // nil names the GCS's leases, not a worker
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->requester != requester) {
      ++it;
      continue;
    }
    rpc::RequestWorkerLeaseReply reply;
    reply.set_rejected(true);
    auto callback = std::move(it->callback);
    it = EraseQueued(it);
    callback(std::move(reply));
  }
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.requester != requester) {
      ++it;
      continue;
    }
    spdlog::info("reclaiming lease {} of dead worker {} [worker_id={} job_id={}]", it->first.Hex().substr(0, 8),
                 requester.Hex(), requester.Hex(), job.Hex());
    available_.Add(HeldBy(it->second));
    gpus_.Release(it->second.gpus);
    lease_of_worker_.erase(it->second.worker);
    pool_->Kill(it->second.worker);
    it = leases_.erase(it);
  }
  Dispatch();
}

absl::Status LeaseGranter::Drain() {
  // Actors' leases (held by the GCS) do not keep the node: they can restart elsewhere.
  size_t tasks = 0;
  ResourceSet free = available_;
  for (const auto& [id, lease] : leases_) {
    if (lease.requester.IsNil()) {
      free.Add(HeldBy(lease));
    } else {
      tasks++;
    }
  }
  if (tasks > 0) return absl::FailedPreconditionError(std::to_string(tasks) + " leases are running");
  if (!queue_.empty()) return absl::FailedPreconditionError(std::to_string(queue_.size()) + " lease requests are queued");
  if (!(free == total_)) return absl::FailedPreconditionError("placement group bundles hold resources");
  if (!draining_) spdlog::info("draining: this node takes no new leases");
  draining_ = true;
  return absl::OkStatus();
}

std::vector<WorkerID> LeaseGranter::ActorWorkers() const {
  std::vector<WorkerID> out;
  for (const auto& [id, lease] : leases_) {
    if (lease.requester.IsNil()) out.push_back(lease.worker);
  }
  return out;
}

void LeaseGranter::Undrain() {
  if (!draining_) return;
  spdlog::info("drain ended: this node takes leases again");
  draining_ = false;
  Dispatch();
}

std::vector<rpc::ResourceDemand> LeaseGranter::PendingDemand() const {
  // By shape and hard label selector: a node type that cannot satisfy the selector
  // would not run the work, however big it is.
  std::map<std::pair<std::map<std::string, double>, std::string>, int64_t> shapes;
  for (const auto& p : queue_) shapes[{p.resources.ToMap(), p.scheduling.hard_labels.text()}]++;
  std::vector<rpc::ResourceDemand> out;
  for (const auto& [key, count] : shapes) {
    rpc::ResourceDemand d;
    d.mutable_shape()->insert(key.first.begin(), key.first.end());
    d.set_label_selector(key.second);
    d.set_count(count);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace orb

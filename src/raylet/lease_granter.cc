#include "raylet/lease_granter.h"

#include <spdlog/spdlog.h>

#include <map>

namespace orb {

LeaseGranter::LeaseGranter(ResourceSet total, WorkerPool* pool, JobFetcher fetch_job, EventLoop* loop,
                           LeaseGranterOptions options)
    : total_(total), available_(total), pool_(pool), fetch_job_(std::move(fetch_job)), loop_(loop),
      options_(std::move(options)) {}

void LeaseGranter::RequestLease(const rpc::RequestWorkerLeaseRequest& request, LeaseCallback callback) {
  std::map<std::string, double> amounts(request.resources().begin(), request.resources().end());
  if (auto s = ResourceSet::Validate(amounts); !s.ok()) {
    rpc::RequestWorkerLeaseReply reply;
    reply.set_rejected(true);
    reply.mutable_error()->set_type(rpc::INFEASIBLE);
    reply.mutable_error()->set_message(std::string(s.message()));
    return callback(std::move(reply));
  }
  spdlog::debug("lease request for job {} shape {}", JobID::FromBinary(request.job_id()).Hex(),
                ResourceSet::FromMap(amounts).ToString());
  PendingLease pending{next_seq_++, JobID::FromBinary(request.job_id()), ResourceSet::FromMap(amounts),
                       std::move(callback), WorkerID::FromBinary(request.requester_worker_id())};
  if (!total_.Contains(pending.resources)) {
    uint64_t seq = pending.seq;
    loop_->RunAfter(options_.infeasible_grace, [this, seq] { RejectInfeasible(seq); });
  }
  EnsureJobInfo(pending.job);
  queue_.push_back(std::move(pending));
  Dispatch();
}

void LeaseGranter::RejectInfeasible(uint64_t seq) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->seq != seq) continue;
    if (total_.Contains(it->resources)) return;  // the node grew meanwhile
    rpc::RequestWorkerLeaseReply reply;
    reply.set_rejected(true);
    reply.mutable_error()->set_type(rpc::INFEASIBLE);
    reply.mutable_error()->set_message("no node can satisfy " + it->resources.ToString() + " (node total " +
                                       total_.ToString() + ")");
    auto callback = std::move(it->callback);
    queue_.erase(it);
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
  available_.Subtract(pending.resources);
  leases_[id] = Lease{worker->id, pending.resources, pending.requester};
  lease_of_worker_[worker->id] = id;
  spdlog::debug("lease {} granted: worker {} with {}", id.Hex().substr(0, 8), worker->id.Hex().substr(0, 8),
                pending.resources.ToString());
  rpc::RequestWorkerLeaseReply reply;
  reply.set_lease_id(id.Binary());
  auto* address = reply.mutable_worker_address();
  address->set_ip(options_.node_ip);
  address->set_port(worker->port);
  address->set_worker_id(worker->id.Binary());
  address->set_node_id(options_.node_id.Binary());
  pending.callback(std::move(reply));
}

void LeaseGranter::Dispatch() {
  std::unordered_map<JobID, int> waiting_for_worker;
  for (auto it = queue_.begin(); it != queue_.end();) {
    PendingLease& pending = *it;
    if (!available_.Contains(pending.resources)) {
      ++it;
      continue;
    }
    auto job = jobs_.find(pending.job);
    if (job == jobs_.end()) {
      EnsureJobInfo(pending.job);
      ++it;
      continue;
    }
    if (WorkerProcess* worker = pool_->PopIdle(pending.job)) {
      Grant(pending, worker);
      it = queue_.erase(it);
      continue;
    }
    int wanted = ++waiting_for_worker[pending.job];
    if (pool_->NumStarting(pending.job) < wanted && pool_->NumStartingTotal() < pool_->max_starting()) {
      if (auto s = pool_->StartWorker(job->second); !s.ok()) {
        rpc::RequestWorkerLeaseReply reply;
        reply.set_rejected(true);
        reply.mutable_error()->set_type(rpc::WORKER_CRASHED);
        reply.mutable_error()->set_message("cannot start a worker: " + std::string(s.message()));
        auto callback = std::move(pending.callback);
        it = queue_.erase(it);
        callback(std::move(reply));
        continue;
      }
    }
    ++it;
  }
}

ResourceSet LeaseGranter::HeldBy(const Lease& lease) {
  ResourceSet held = lease.resources;
  if (lease.blocked) held.Set("CPU", 0);  // lent back while blocked
  return held;
}

void LeaseGranter::ReturnLease(const LeaseID& lease_id, bool worker_failed) {
  auto it = leases_.find(lease_id);
  spdlog::debug("lease {} returned{}", lease_id.Hex().substr(0, 8), worker_failed ? " (worker failed)" : "");
  if (it == leases_.end()) return;  // already released (the worker died first)
  Lease lease = it->second;
  leases_.erase(it);
  lease_of_worker_.erase(lease.worker);
  available_.Add(HeldBy(lease));
  if (worker_failed) {
    pool_->Kill(lease.worker);
  } else {
    pool_->PushIdle(lease.worker);
  }
  Dispatch();
}

void LeaseGranter::SetBlocked(const WorkerID& worker, bool blocked) {
  auto lid = lease_of_worker_.find(worker);
  if (lid == lease_of_worker_.end()) return;
  Lease& lease = leases_[lid->second];
  if (lease.blocked == blocked) return;
  lease.blocked = blocked;
  // Only CPU is lent out while blocked; GPUs and custom resources stay with the task.
  ResourceSet cpu;
  cpu.Set("CPU", lease.resources.Get("CPU"));
  if (blocked) {
    available_.Add(cpu);
    Dispatch();
  } else {
    available_.Subtract(cpu);
  }
}

void LeaseGranter::OnWorkerDeath(const WorkerProcess& worker) {
  auto lid = lease_of_worker_.find(worker.id);
  if (lid != lease_of_worker_.end()) {
    auto it = leases_.find(lid->second);
    if (it != leases_.end()) {
      available_.Add(HeldBy(it->second));
      leases_.erase(it);
    }
    lease_of_worker_.erase(lid);
  }
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->requester != worker.id) {
      ++it;
      continue;
    }
    rpc::RequestWorkerLeaseReply reply;
    reply.set_rejected(true);
    auto callback = std::move(it->callback);
    it = queue_.erase(it);
    callback(std::move(reply));
  }
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.requester != worker.id) {
      ++it;
      continue;
    }
    spdlog::info("reclaiming lease {} of dead worker {}", it->first.Hex().substr(0, 8), worker.id.Hex());
    available_.Add(HeldBy(it->second));
    lease_of_worker_.erase(it->second.worker);
    pool_->Kill(it->second.worker);
    it = leases_.erase(it);
  }
  Dispatch();
}

std::vector<rpc::ResourceDemand> LeaseGranter::PendingDemand() const {
  std::map<std::map<std::string, double>, int64_t> shapes;
  for (const auto& p : queue_) shapes[p.resources.ToMap()]++;
  std::vector<rpc::ResourceDemand> out;
  for (const auto& [shape, count] : shapes) {
    rpc::ResourceDemand d;
    d.mutable_shape()->insert(shape.begin(), shape.end());
    d.set_count(count);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace orb

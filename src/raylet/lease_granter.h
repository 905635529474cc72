// Grants worker leases on this node with resource accounting, and sends requests that
// belong elsewhere to the node that should serve them (spillback).
//
// A lease request names a job, a resource shape and scheduling options. The Scheduler
// (filter → rank) picks a node from the cluster view; if it is another node, the reply
// tells the requester to ask that node's raylet, which then grants or queues it there
// (grant_or_reject: never sent on again). A request for this node is granted when the
// resources are available and an idle worker of the job exists; otherwise it waits while
// a worker starts or resources free up. A request no node can hold is checked again
// after `infeasible_grace` (time for the cluster to grow): if a node type the autoscaler
// may launch could hold it, it keeps waiting (with a warning, as Ray's); otherwise it is
// answered INFEASIBLE. One that names a node that does not exist (or is dead) is
// INFEASIBLE at once. A worker blocked in Get gives its lease's CPU (a bundle's too) back until it unblocks, so
// tasks that wait on nested tasks cannot starve them of CPU.
//
// Queued work follows capacity: whenever the cluster view changes (a node joins, another
// frees resources), each queued request this node cannot serve now — those sent here by
// another raylet included — goes to a node that has room for it, as Ray's raylets re-run
// scheduling over their queues. A worker is started only for a request that would fit
// once the worker is up, so a burst of requests starts no more workers than the node can
// run; a requester that no longer needs a request cancels it (CancelRequest), and it
// starts nothing and leaves the node's demand at once.
//
// Runs on the raylet's event loop; not thread-safe.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "common/event_loop.h"
#include "common/id.h"
#include "common/node_types.h"
#include "common/resources.h"
#include "gcs_service.pb.h"
#include "raylet/gpu_allocator.h"
#include "raylet/scheduling/scheduler.h"
#include "raylet/worker_pool.h"
#include "raylet_service.pb.h"

namespace orb {

struct LeaseGranterOptions {
  std::chrono::milliseconds infeasible_grace{3000};
  // What this node sent to another counts against that node in its view until the node's
  // own figures change, or for this long: a node that ran the work before its next
  // gossip round never reports a change, and would look full for good.
  std::chrono::milliseconds view_reservation_ttl{500};
  std::string node_ip = "127.0.0.1";
  int node_port = 0;
  NodeID node_id;
  std::map<std::string, std::string> labels;
  HybridPolicyOptions hybrid;
  // GPUs are shared through MPS: a fractional lease's worker gets its share (GpuEnv).
  bool gpu_mps = false;
};

// What the granter did since the raylet started, for /metrics.
// A lease as the memory monitor and `orb list workers` see it.
struct LeaseSummary {
  WorkerID worker;
  ResourceSet resources;
  std::chrono::steady_clock::time_point granted_at;
  bool retriable = false;  // its requester may retry what runs on it
};

struct LeaseStats {
  uint64_t requests = 0;    // lease requests received
  uint64_t granted = 0;     // leases granted here
  uint64_t spilled = 0;     // requests sent on to another node
  uint64_t infeasible = 0;  // requests answered INFEASIBLE
  uint64_t replaced = 0;    // queued requests sent on to a node with room when the view changed
  uint64_t canceled = 0;    // queued requests their requester cancelled
  std::map<std::string, uint64_t> infeasible_shapes;  // by resource shape (ResourceSet::ToString)
};

class LeaseGranter {
 public:
  using JobFetcher = std::function<void(const JobID&, std::function<void(absl::StatusOr<rpc::JobInfo>)>)>;
  using LeaseCallback = std::function<void(rpc::RequestWorkerLeaseReply)>;
  // The node types an autoscaler may launch, fetched anew (asynchronously) when asked.
  using NodeTypeFetcher = std::function<void(std::function<void(std::vector<NodeType>)>)>;

  LeaseGranter(ResourceSet total, WorkerSupply* pool, JobFetcher fetch_job, EventLoop* loop,
               LeaseGranterOptions options, NodeTypeFetcher fetch_node_types = nullptr);

  void RequestLease(const rpc::RequestWorkerLeaseRequest& request, LeaseCallback callback);
  // `worker_failed`: its holder saw the worker die (it is killed); `worker_exiting`: it
  // ends by itself (max_calls: never reused). Else it is idle again.
  void ReturnLease(const LeaseID& lease, bool worker_failed, bool worker_exiting = false);
  // The worker a lease runs on (or ran on, when its worker died lately: its holder may
  // return it after the raylet saw the death); nil when the lease is not known.
  WorkerID WorkerOfLease(const LeaseID& lease) const;
  void SetBlocked(const WorkerID& worker, bool blocked);
  // A worker or driver of this node died: release the lease it ran under, then
  // ReclaimFromRequester.
  void OnWorkerDeath(const WorkerProcess& worker);
  // `requester` (a worker or driver of `job`, on any node) died: drop the lease requests
  // it queued here and reclaim the leases it holds here (their workers run orphaned
  // tasks and are stopped). A nil requester names the GCS's leases: nothing is reclaimed.
  void ReclaimFromRequester(const WorkerID& requester, const JobID& job);
  // `job` ended: reclaim the leases its drivers and workers hold here (except those the
  // GCS holds for actors), kill their workers, and drop its waiting requests.
  void OnJobFinished(const JobID& job);
  // Grants whatever can be granted now. Call after anything that frees resources or workers.
  void Dispatch();
  // Replaces what this node knows of the other nodes (the local entry is always live),
  // then sends requests still waiting here to another node that can now take them.
  void UpdateClusterView(std::vector<NodeView> remote_nodes);
  // The requester no longer needs the lease it asked for as `request_id`: if the request
  // still waits here, it is answered `canceled` and dropped (no worker starts for it, and
  // it leaves PendingDemand). Returns whether it was waiting here.
  bool CancelRequest(const WorkerID& requester, uint64_t request_id);

  const ResourceSet& total() const { return total_; }
  // Called with each lease granted, before its requester hears of it (the raylet sets
  // the worker's cgroup limits from the lease's resources).
  void OnGrant(std::function<void(const WorkerProcess&, const ResourceSet&)> callback) {
    on_grant_ = std::move(callback);
  }
  std::vector<LeaseSummary> Leases() const;

  // Placement group bundles (BundleManager): take resources out of what leases can use,
  // give them back, or change the node's capacity (the group's own resources).
  bool Reserve(const ResourceSet& resources);
  void Unreserve(const ResourceSet& resources);
  void AddCapacity(const ResourceSet& resources);
  void RemoveCapacity(const ResourceSet& resources);
  // Ends every lease holding a resource whose name contains `fragment` (its worker is
  // killed); returns how many.
  int KillLeasesHolding(const std::string& fragment);
  // A node of the cluster view (this one included); nullptr when unknown.
  const NodeView* FindNode(const NodeID& id) { return CurrentView().Find(id); }
  // Every node of the cluster view (this one included).
  const std::vector<NodeView>& Nodes() { return CurrentView().nodes(); }
  const ResourceSet& available() const { return available_; }
  // Stops taking leases if the node is idle (no task's lease, nothing queued, every
  // resource free but what actors hold: they can restart elsewhere); from then on the
  // node offers nothing to the scheduler. Returns whether it drained, or why not.
  absl::Status Drain();
  // Takes leases again (a drain that could not finish: the node stays).
  void Undrain();
  // The workers of the leases the GCS holds for actors.
  std::vector<WorkerID> ActorWorkers() const;
  bool draining() const { return draining_; }
  // Queued requests grouped by shape, for status and autoscaling.
  std::vector<rpc::ResourceDemand> PendingDemand() const;
  const LeaseStats& stats() const { return stats_; }
  // What the lease running on `worker` holds (empty: none).
  ResourceSet ResourcesLeasedTo(const WorkerID& worker) const;
  size_t num_leases() const { return leases_.size(); }
  size_t num_queued() const { return queue_.size(); }

 private:
  struct PendingLease {
    uint64_t seq;
    JobID job;
    ResourceSet resources;
    LeaseCallback callback;
    WorkerID requester;
    SchedulingRequest scheduling;
    bool spilled_here = false;  // sent by another raylet: stays here
    WorkerKind worker_kind;     // its worker's environment and language
    bool warned_waiting = false;  // logged that it waits for the autoscaler
    bool retriable = false;
    uint64_t request_id = 0;  // the requester's name for it (CancelWorkerLease); 0: none
  };
  struct Lease {
    WorkerID worker;
    ResourceSet resources;
    WorkerID requester;  // the driver or worker that holds the lease
    bool blocked = false;
    GpuGrant gpus;  // GPU indices on this node, and how much of each
    std::chrono::steady_clock::time_point granted_at;
    bool retriable = false;
  };
  void EnsureJobInfo(const JobID& job);
  void Grant(PendingLease& pending, WorkerProcess* worker);
  void RejectInfeasible(uint64_t seq);
  // RejectInfeasible once the launchable node types are known.
  void DecideInfeasible(uint64_t seq, const std::vector<NodeType>& types);
  // Whether this node could ever run `request` (resources in total, labels, affinity).
  bool LocallyFeasible(const SchedulingRequest& request) const;
  const ClusterView& CurrentView();
  // Sends each queued request this node cannot serve now to a node that has room for it.
  void PlaceQueuedAgain();
  // Counts `resources` as used on `node` (a request was sent there), for a while.
  void ReserveInView(const NodeID& node, const ResourceSet& resources);
  // Gives back the view's reservations older than view_reservation_ttl.
  void ExpireReservations();
  // Removes a request from the queue (and its resources from queued_resources_).
  std::deque<PendingLease>::iterator EraseQueued(std::deque<PendingLease>::iterator it);
  rpc::RequestWorkerLeaseReply SpillTo(const NodeView& node);
  rpc::RequestWorkerLeaseReply Infeasible(const ResourceSet& shape, const std::string& why);
  // What a lease holds now: its resources, less the CPU it lent back while blocked.
  static ResourceSet HeldBy(const Lease& lease);

  ResourceSet total_;
  ResourceSet available_;
  GpuAllocator gpus_;
  std::function<void(const WorkerProcess&, const ResourceSet&)> on_grant_;
  WorkerSupply* pool_;
  JobFetcher fetch_job_;
  NodeTypeFetcher fetch_node_types_;
  EventLoop* loop_;
  LeaseGranterOptions options_;
  Scheduler scheduler_;
  ClusterView view_;
  struct ViewReservation {
    NodeID node;
    ResourceSet resources;
    std::chrono::steady_clock::time_point expires;
  };
  std::deque<ViewReservation> reservations_;  // oldest first
  bool reservation_timer_set_ = false;
  uint64_t next_seq_ = 1;
  bool draining_ = false;
  LeaseStats stats_;
  std::deque<PendingLease> queue_;
  ResourceSet queued_resources_;  // the sum of the queued requests' resources
  std::unordered_map<LeaseID, Lease> leases_;
  std::unordered_map<WorkerID, LeaseID> lease_of_worker_;
  // Leases that ended because their worker died, newest last (at most kRecentDeaths).
  std::deque<std::pair<LeaseID, WorkerID>> ended_by_death_;
  static constexpr size_t kRecentDeaths = 256;
  std::unordered_map<JobID, rpc::JobInfo> jobs_;
  std::unordered_map<JobID, std::string> job_errors_;
  std::unordered_set<JobID> fetching_;
};

}  // namespace orb

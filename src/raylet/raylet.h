// One node of an orb cluster: registers with the GCS, gossips its state with the other
// members (src/gossip/), and serves worker registration, worker leases and the
// shared-memory object store to local drivers and workers. The scheduler's view of the
// other nodes is this node's gossip view.
//
// Construction wires the parts in dependency order (object store, worker pool, lease
// granter); Start() registers with the GCS and begins serving. All state lives on one
// event loop; gRPC handlers post into it.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/event_loop.h"
#include "common/call_stream_routes.h"
#include "common/client_pool.h"
#include "common/http_endpoint.h"
#include "common/prometheus_text.h"
#include "core_worker_service.grpc.pb.h"
#include "common/id.h"
#include "common/resources.h"
#include "common/node_flags.h"
#include "common/rpc.h"
#include "common/rpc_server.h"
#include "gcs_service.grpc.pb.h"
#include "gossip/gossip_node.h"
#include "gossip/grpc_transport.h"
#include "raylet/death_watcher.h"
#include "raylet/lease_granter.h"
#include "raylet/memory_monitor.h"
#include "raylet/object_manager/object_evacuator.h"
#include "raylet/object_manager/object_puller.h"
#include "raylet/object_manager/object_stream_server.h"
#include "raylet/placement/bundle_manager.h"
#include "raylet/object_store/local_object_store.h"
#include "common/shm_arena.h"
#include "raylet/worker_cgroups.h"
#include "raylet/fork_servers.h"
#include "raylet/worker_pool.h"
#include "raylet_service.grpc.pb.h"

namespace orb {

struct RayletOptions {
  std::string gcs_address;
  std::string bind = "127.0.0.1";
  std::string node_ip = "127.0.0.1";  // how other processes reach this node
  int port = 0;
  int object_manager_port = 0;  // the object stream other nodes pull from (0: any free)
  ResourceSet resources;  // CPU, GPU, memory and custom amounts
  std::map<std::string, std::string> labels;
  uint64_t object_store_bytes = 256ull << 20;
  // Where primary copies are spilled when the store is under pressure, one directory
  // or several (files spread over them, a full one skipped); none:
  // <session_dir>/spill (or the temp directory without a session). Spilling starts
  // once more than `spill_threshold` of the store is in use, or a create needs room.
  std::vector<std::string> spill_dirs;
  double spill_threshold = 0.8;
  std::string session_dir;
  std::string token;
  std::string default_worker_path;
  std::string python_executable = "python3";  // runs Python workers of jobs that name none
  std::vector<std::string> python_path;        // on Python workers' module search path
  std::chrono::milliseconds idle_worker_timeout{60000};
  std::chrono::milliseconds infeasible_grace{3000};
  int64_t max_message_bytes = kDefaultMaxMessageBytes;  // the largest RPC request served
  int metrics_export_port = -1;  // Prometheus /metrics on `bind`: < 0 a free port, 0 none
  // Rounds, fan-out, probes; the cluster ID comes from the GCS at registration.
  gossip::GossipOptions gossip;
  // Workers in cgroups with their lease's CPU and memory as limits: "auto" (where the
  // raylet can make cgroups, saying why not where it cannot), "on" (fail to start
  // without), "off".
  std::string worker_cgroups = "auto";
  MemoryMonitorOptions memory_monitor;
  // Fractional GPU leases get an MPS share: "auto" (when an MPS control daemon's pipe
  // directory exists), "on", "off".
  std::string gpu_mps = "auto";
};

class Raylet {
 public:
  static absl::StatusOr<std::unique_ptr<Raylet>> Create(RayletOptions options);
  ~Raylet();

  // Starts serving, then registers with the GCS (retrying while it is unreachable).
  absl::Status Start();
  void Stop();
  int port() const { return port_; }
  const NodeID& node_id() const { return node_id_; }

  void HandleRegisterWorker(const rpc::RegisterWorkerRequest& req, rpc::RegisterWorkerReply* reply, SendReply send);
  void HandleDisconnectWorker(const rpc::DisconnectWorkerRequest& req, rpc::DisconnectWorkerReply* reply,
                              SendReply send);
  void HandleRequestWorkerLease(const rpc::RequestWorkerLeaseRequest& req, rpc::RequestWorkerLeaseReply* reply,
                                SendReply send);
  void HandleCancelWorkerLease(const rpc::CancelWorkerLeaseRequest& req, rpc::CancelWorkerLeaseReply* reply,
                               SendReply send);
  void HandleReturnWorker(const rpc::ReturnWorkerRequest& req, rpc::ReturnWorkerReply* reply, SendReply send);
  // Answers a ReturnWorker for a failed worker with how its process ended, once it has
  // (looking again every kWorkerExitPoll), or without after `deadline`.
  void AnswerWithWorkerExit(const WorkerID& worker, rpc::ReturnWorkerReply* reply, SendReply send,
                            std::chrono::steady_clock::time_point deadline);
  // How long a ReturnWorker for a failed worker waits to see the process end.
  static constexpr std::chrono::milliseconds kWorkerExitWait{1000};
  static constexpr std::chrono::milliseconds kWorkerExitPoll{20};
  // Sends a worker's death to the GCS until it is recorded, backing off between tries.
  void ReportWorkerFailure(rpc::ReportWorkerFailureRequest report, std::chrono::milliseconds backoff);
  static constexpr std::chrono::milliseconds kReportRetryFirst{200};
  static constexpr std::chrono::milliseconds kReportRetryMax{5000};
  void HandleNotifyBlocked(const rpc::NotifyBlockedRequest& req, rpc::NotifyBlockedReply* reply, SendReply send);
  void HandleCreateObject(const rpc::CreateObjectRequest& req, rpc::CreateObjectReply* reply, SendReply send);
  void HandleSealObject(const rpc::SealObjectRequest& req, rpc::SealObjectReply* reply, SendReply send);
  void HandleGetObjects(const rpc::GetObjectsRequest& req, rpc::GetObjectsReply* reply, SendReply send);
  void HandleReleaseObjects(const rpc::ReleaseObjectsRequest& req, rpc::ReleaseObjectsReply* reply, SendReply send);
  void HandleDeleteObjects(const rpc::DeleteObjectsRequest& req, rpc::DeleteObjectsReply* reply, SendReply send);
  void HandleRegisterObjectCopies(const rpc::RegisterObjectCopiesRequest& req, rpc::RegisterObjectCopiesReply* reply,
                                  SendReply send);
  void HandleListStoreObjects(const rpc::ListStoreObjectsRequest& req, rpc::ListStoreObjectsReply* reply,
                              SendReply send);
  void HandleGetNodeStats(const rpc::GetNodeStatsRequest& req, rpc::GetNodeStatsReply* reply, SendReply send);
  // Leaving without losing objects (raylet_drain.cc).
  void HandleDrainNode(const rpc::DrainNodeRequest& req, rpc::DrainNodeReply* reply, SendReply send);
  void HandleAdoptObject(const rpc::AdoptObjectRequest& req, rpc::AdoptObjectReply* reply, SendReply send);
  void HandleCheckWorkers(const rpc::CheckWorkersRequest& req, rpc::CheckWorkersReply* reply, SendReply send);
  void HandlePullObject(const rpc::PullObjectRequest& req, rpc::PullObjectReply* reply, SendReply send);
  void HandlePrepareBundle(const rpc::PrepareBundleRequest& req, rpc::PrepareBundleReply* reply, SendReply send);
  void HandleCommitBundle(const rpc::CommitBundleRequest& req, rpc::CommitBundleReply* reply, SendReply send);
  void HandleReturnBundle(const rpc::ReturnBundleRequest& req, rpc::ReturnBundleReply* reply, SendReply send);
  // This node's workers and drivers (raylet_metrics.cc, as the metrics below).
  void HandleListWorkers(const rpc::ListWorkersRequest& req, rpc::ListWorkersReply* reply, SendReply send);
  // The node's log files (raylet_logs.cc).
  void HandleListLogs(const rpc::ListLogsRequest& req, rpc::ListLogsReply* reply, SendReply send);
  void HandleReadLog(const rpc::ReadLogRequest& req, rpc::ReadLogReply* reply, SendReply send);

  // The node's /metrics: its own, then its workers' merged in. Called off the loop.
  absl::StatusOr<std::string> MetricsText();
  int metrics_export_port() const { return metrics_endpoint_ ? metrics_endpoint_->port() : 0; }

 private:
  Raylet(RayletOptions options, std::unique_ptr<ShmArena> arena);
  rpc::NodeInfo DescribeNode() const;
  // Puts workers in cgroups (or says why not) and starts the memory monitor
  // (raylet_isolation.cc); before the worker pool is made.
  absl::Status SetUpIsolation();
  void StartMemoryMonitor();
  // The leased workers, as the memory monitor weighs them.
  std::vector<OomCandidate> OomCandidates() const;
  // Sets the cgroup limits of a worker just leased with `resources`.
  void LimitWorker(const WorkerProcess& worker, const ResourceSet& resources);
  // Whether fractional GPU leases get MPS shares (options_.gpu_mps resolved).
  bool UseMps() const;
  // Membership (raylet_membership.cc, as DescribeNode). Registers; returns the cluster ID.
  absl::StatusOr<std::string> RegisterWithGcs();
  void StartGossip(const std::string& cluster_id);
  // Gossips this node's available resources and demand when they changed.
  void PublishLocalState();
  // Starts serving this node's objects to other nodes' pullers.
  absl::Status StartObjectStream();
  // Rebuilds the scheduler's cluster view from the gossip view.
  void UpdateClusterView();
  // Registers again after the GCS rejected our gossip as another cluster's.
  void Rejoin();
  void OnWorkerDeath(const WorkerProcess& worker);
  // Starts the idle workers a running job asked every node for (once per job).
  void PrestartWorkers(const rpc::JobInfo& job);
  // Asks `node`'s raylet to free its copies of `ids` (nothing when it is gone).
  void DeleteAt(const NodeID& node, const std::vector<ObjectID>& ids);
  std::string LogDir() const;  // <session>/logs; empty without a session
  // Sends the lines workers wrote since the last call to the GCS, for their drivers.
  void ForwardWorkerLogs();
  struct LogCursor {
    std::string path;
    JobID job;
    pid_t pid = 0;
    int64_t offset = 0;
    std::string partial;  // the start of a line not yet ended
  };
  // The raylet's own metrics (on the loop).
  prom::Exposition NodeMetrics() const;
  // (worker ID hex, address) of each registered worker and driver, for their metrics.
  std::vector<std::pair<std::string, std::string>> WorkerEndpoints() const;
  // Where a registered worker serves its CoreWorkerService.
  std::string WorkerAddress(const WorkerProcess& w) const;
  // Asks an idle worker to exit (WorkerPoolOptions::ask_to_exit).
  void AskToExit(const WorkerProcess& w, WorkerPoolOptions::ExitAnswer answer);
  // Sends the pulls completed since the last call to the GCS, for the timeline.
  void ReportTransfers();
  // Wires the evacuator that moves primaries away when the node is drained.
  void MakeEvacuator();
  // Drain steps: once the actors' leases are back (or `deadline`: `refuse`), the objects
  // move (EvacuateObjects), then the DrainNode reply goes.
  void AfterActorsLeft(std::chrono::steady_clock::time_point deadline, const rpc::DrainNodeRequest& req,
                       rpc::DrainNodeReply* reply, SendReply send, std::function<void(std::string)> refuse);
  void EvacuateObjects(const rpc::DrainNodeRequest& req, rpc::DrainNodeReply* reply, SendReply send);
  static constexpr std::chrono::seconds kActorsLeaveTimeout{30};
  // How long another node may take to adopt one object (pull it) when this one leaves.
  static constexpr std::chrono::seconds kAdoptTimeout{60};
  // Tells the node holding the primary of `id` that this node has a copy.
  void RegisterCopy(const ObjectID& id, const NodeID& source, const std::string& source_address);

  RayletOptions options_;
  NodeID node_id_;
  EventLoop loop_;
  std::unique_ptr<ShmArena> arena_;
  LocalObjectStore object_store_;
  std::unique_ptr<WorkerCgroups> cgroups_;  // null: workers are not isolated (isolation_ says why)
  std::string isolation_;
  std::unique_ptr<ForkServers> fork_servers_;  // before worker_pool_, which uses it
  std::unique_ptr<WorkerPool> worker_pool_;
  std::unique_ptr<LeaseGranter> lease_granter_;
  std::unique_ptr<DeathWatcher> death_watcher_;
  std::unique_ptr<MemoryMonitor> memory_monitor_;
  std::unique_ptr<ObjectPuller> object_puller_;
  std::unique_ptr<ObjectStreamServer> object_stream_;
  std::unique_ptr<RouteStreamServer> routes_;  // the service's methods over the call stream
  int object_manager_port_ = 0;  // the object stream's, kept: the stream is gone once stopping
  std::unique_ptr<BundleManager> bundles_;
  std::unique_ptr<RpcClient<rpc::GcsService>> gcs_;
  std::unique_ptr<ClientPool<rpc::RayletService>> raylet_clients_;  // other nodes' raylets
  gossip::NodeDirectory directory_;
  std::unique_ptr<gossip::GrpcGossipTransport> gossip_transport_;
  std::unique_ptr<gossip::GossipNode> gossip_;
  std::unique_ptr<gossip::GossipGrpcService> gossip_service_;
  std::string last_published_;
  bool view_dirty_ = false;
  std::chrono::steady_clock::time_point last_rejoin_;
  std::unique_ptr<RpcService> service_;
  StartedServer server_;
  std::unique_ptr<HttpEndpoint> metrics_endpoint_;
  ClientPool<rpc::CoreWorkerService> worker_metric_clients_;  // used by MetricsText's threads
  std::unordered_map<std::string, NodeID> node_of_stream_;
  std::unique_ptr<ObjectEvacuator> evacuator_;
  ClientPool<rpc::CoreWorkerService> worker_clients_;  // owners told where objects moved, idle workers asked to exit
  // The RPC address of each owner of primaries here ("ip:port"), from CreateObject.
  std::unordered_map<WorkerID, std::string> owner_addresses_;
  std::unordered_set<JobID> prestarted_jobs_;  // running jobs whose workers were prestarted here
  // Pins an adopted object while it is made primary.
  const WorkerID adopt_reader_ = WorkerID::FromRandom();
  std::unordered_map<WorkerID, LogCursor> log_cursors_;  // workers whose output goes to their drivers  // object stream address -> node, for transfers
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::string cluster_id_;  // the cluster this node joined; constant after Start  // set by Stop() on the main thread, read on the loop
};

}  // namespace orb

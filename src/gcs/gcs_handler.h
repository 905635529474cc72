// The GCS's state machine: node table, job table, key-value store, health of nodes.
//
// Every table is written through to a TableStore before the reply is sent, and loaded
// from it at start, so a GCS restarted on the same storage has every node, job and
// key. The GCS is a gossip member and the authority among them (src/gossip/): nodes'
// available resources and demand reach the node table by gossip, and a node the
// members suspect (it stopped answering probes) and that does not refute within the
// suspicion timeout is declared dead, recorded and published. Only the GCS declares
// nodes dead, and a dead node ID never becomes alive again (a restarted raylet
// registers as a new node).
//
// Handlers follow `HandleX(request, reply, send_reply)` and run on the GCS event loop;
// the class is not thread-safe and needs no locks.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/event_loop.h"
#include "common/id.h"
#include "common/rpc.h"
#include "gcs/actor_manager.h"
#include "gcs/placement_group_manager.h"
#include "gcs/publisher.h"
#include "gcs/table_store.h"
#include "gcs/task_event_store.h"
#include "gossip/gossip_node.h"
#include "gcs_service.pb.h"

namespace orb::gcs {

struct GcsOptions {
  // Probes and suspicion; the cluster ID is the GCS's own (kept in its storage).
  gossip::GossipOptions gossip;
  std::string token;  // for the GCS's own calls to raylets and workers (actors)
  size_t max_dead_actors = 10000;  // dead actors kept for lookups; older ones are forgotten
};

class GcsHandler {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // Loads every table from `store`. Nodes recorded alive get a fresh timeout to report.
  static absl::StatusOr<std::unique_ptr<GcsHandler>> Create(std::unique_ptr<TableStore> store,
                                                            EventLoop* loop, GcsOptions options);

  void HandleRegisterNode(const rpc::RegisterNodeRequest& req, rpc::RegisterNodeReply* reply, SendReply send);
  void HandleUnregisterNode(const rpc::UnregisterNodeRequest& req, rpc::UnregisterNodeReply* reply, SendReply send);
  void HandleGetAllNodes(const rpc::GetAllNodesRequest& req, rpc::GetAllNodesReply* reply, SendReply send);
  // A raylet's worker died: the actor on it failed; a driver's death ends its job.
  void HandleReportWorkerFailure(const rpc::ReportWorkerFailureRequest& req, rpc::ReportWorkerFailureReply* reply,
                                 SendReply send);
  void HandleGetMetrics(const rpc::GetMetricsRequest& req, rpc::GetMetricsReply* reply, SendReply send);
  void HandleAddJob(const rpc::AddJobRequest& req, rpc::AddJobReply* reply, SendReply send);
  void HandleMarkJobFinished(const rpc::MarkJobFinishedRequest& req, rpc::MarkJobFinishedReply* reply, SendReply send);
  void HandleGetAllJobs(const rpc::GetAllJobsRequest& req, rpc::GetAllJobsReply* reply, SendReply send);
  void HandleGetJob(const rpc::GetJobRequest& req, rpc::GetJobReply* reply, SendReply send);
  void HandleKvPut(const rpc::KvPutRequest& req, rpc::KvPutReply* reply, SendReply send);
  void HandleKvGet(const rpc::KvGetRequest& req, rpc::KvGetReply* reply, SendReply send);
  void HandleKvDelete(const rpc::KvDeleteRequest& req, rpc::KvDeleteReply* reply, SendReply send);
  void HandleKvKeys(const rpc::KvKeysRequest& req, rpc::KvKeysReply* reply, SendReply send);
  void HandlePoll(const rpc::PollRequest& req, rpc::PollReply* reply, SendReply send);
  // Task events from owners and executors, transfers from raylets (the state API's tasks).
  void HandleAddTaskEvents(const rpc::AddTaskEventsRequest& req, rpc::AddTaskEventsReply* reply, SendReply send);
  void HandleListTasks(const rpc::ListTasksRequest& req, rpc::ListTasksReply* reply, SendReply send);
  // Workers' output from their raylets, published on LOG_CHANNEL for the drivers.
  void HandlePublishLogs(const rpc::PublishLogsRequest& req, rpc::PublishLogsReply* reply, SendReply send);

  // The cluster as the GCS sees it, in Prometheus's text format: nodes, jobs, actors,
  // placement groups and tasks by state, gossip, and this process's counters and RPC
  // latencies. On the loop.
  std::string MetricsText() const;
  // Where /metrics is served (0: not served), for GetMetrics.
  void set_metrics_export_port(int port) { metrics_export_port_ = port; }
  void set_dashboard_port(int port) { dashboard_port_ = port; }
  void set_call_stream_port(int port) { call_stream_port_ = port; }

  // Joins the gossip as `self_address` (where members reach this GCS) and starts its
  // timer on the loop. Nodes recorded alive are seeded into the view and probed.
  void StartGossip(const std::string& self_address, gossip::GossipTransport* transport);
  // Hands a received gossip message to the member; ignored before StartGossip.
  gossip::GossipNode::Received DeliverGossip(const std::string& bytes);
  const std::string& cluster_id() const { return cluster_id_; }
  // Answers every long poll parked here (pub/sub, actor and placement group waits), so
  // that stopping the server does not wait for them. On the loop.
  void AnswerParkedCalls();
  const gossip::GossipNode* gossip() const { return gossip_.get(); }
  ActorManager* actors() { return actors_.get(); }
  PlacementGroupManager* placement_groups() { return placement_groups_.get(); }

 private:
  GcsHandler(std::unique_ptr<TableStore> store, EventLoop* loop, GcsOptions options);
  absl::Status Load();
  absl::Status SaveNode(const rpc::NodeInfo& node);
  void MarkNodeDead(rpc::NodeInfo& node, const std::string& reason);
  void PublishNode(const rpc::NodeInfo& node);
  void SeedGossip(const rpc::NodeInfo& node);
  // Brings the node table in line with the gossip entry at `index`.
  void SyncNodeFromGossip(uint32_t index);

  std::unique_ptr<TableStore> store_;
  EventLoop* loop_;
  GcsOptions options_;
  Publisher publisher_;
  // LOG_CHANNEL alone: chatty workers must not push node and job changes out of history.
  Publisher log_publisher_{2000};
  std::unordered_map<NodeID, rpc::NodeInfo> nodes_;
  size_t raylet_turn_ = 0;  // whose turn it is to take an actor that needs no resources
  std::unique_ptr<ActorManager> actors_;
  std::unique_ptr<PlacementGroupManager> placement_groups_;
  std::string cluster_id_;
  gossip::NodeDirectory directory_;
  std::unique_ptr<gossip::GossipNode> gossip_;
  std::unordered_map<JobID, rpc::JobInfo> jobs_;
  uint32_t next_job_id_ = 1;
  TaskEventStore task_events_;
  int metrics_export_port_ = 0;
  int dashboard_port_ = 0;
  int call_stream_port_ = 0;
};

}  // namespace orb::gcs

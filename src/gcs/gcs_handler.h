// The GCS's state machine: node table, job table, key-value store, health of nodes.
//
// Every table is written through to a TableStore before the reply is sent, and loaded
// from it at start, so a GCS restarted on the same storage has every node, job and
// key. Nodes report heartbeats; a node silent for `node_timeout` is declared dead,
// recorded and published. Only the GCS declares nodes dead, and a dead node ID never
// becomes alive again (a restarted raylet registers as a new node).
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
#include "gcs/publisher.h"
#include "gcs/table_store.h"
#include "gcs_service.pb.h"

namespace orb::gcs {

struct GcsOptions {
  // A node that sends no heartbeat for this long is declared dead.
  std::chrono::milliseconds node_timeout{10000};
  // How often the GCS checks heartbeats.
  std::chrono::milliseconds health_check_period{500};
};

class GcsHandler {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // Loads every table from `store`. Nodes recorded alive get a fresh timeout to report.
  static absl::StatusOr<std::unique_ptr<GcsHandler>> Create(std::unique_ptr<TableStore> store,
                                                            EventLoop* loop, GcsOptions options);

  void HandleRegisterNode(const rpc::RegisterNodeRequest& req, rpc::RegisterNodeReply* reply, SendReply send);
  void HandleUnregisterNode(const rpc::UnregisterNodeRequest& req, rpc::UnregisterNodeReply* reply, SendReply send);
  void HandleReportHeartbeat(const rpc::ReportHeartbeatRequest& req, rpc::ReportHeartbeatReply* reply, SendReply send);
  void HandleGetAllNodes(const rpc::GetAllNodesRequest& req, rpc::GetAllNodesReply* reply, SendReply send);
  void HandleAddJob(const rpc::AddJobRequest& req, rpc::AddJobReply* reply, SendReply send);
  void HandleMarkJobFinished(const rpc::MarkJobFinishedRequest& req, rpc::MarkJobFinishedReply* reply, SendReply send);
  void HandleGetAllJobs(const rpc::GetAllJobsRequest& req, rpc::GetAllJobsReply* reply, SendReply send);
  void HandleGetJob(const rpc::GetJobRequest& req, rpc::GetJobReply* reply, SendReply send);
  void HandleKvPut(const rpc::KvPutRequest& req, rpc::KvPutReply* reply, SendReply send);
  void HandleKvGet(const rpc::KvGetRequest& req, rpc::KvGetReply* reply, SendReply send);
  void HandleKvDelete(const rpc::KvDeleteRequest& req, rpc::KvDeleteReply* reply, SendReply send);
  void HandleKvKeys(const rpc::KvKeysRequest& req, rpc::KvKeysReply* reply, SendReply send);
  void HandlePoll(const rpc::PollRequest& req, rpc::PollReply* reply, SendReply send);

  // Declares dead every node whose last heartbeat is older than the timeout.
  void CheckNodeHealth();

 private:
  GcsHandler(std::unique_ptr<TableStore> store, EventLoop* loop, GcsOptions options);
  absl::Status Load();
  absl::Status SaveNode(const rpc::NodeInfo& node);
  void MarkNodeDead(rpc::NodeInfo& node, const std::string& reason);
  void PublishNode(const rpc::NodeInfo& node);

  std::unique_ptr<TableStore> store_;
  EventLoop* loop_;
  GcsOptions options_;
  Publisher publisher_;
  std::unordered_map<NodeID, rpc::NodeInfo> nodes_;
  std::unordered_map<NodeID, std::chrono::steady_clock::time_point> last_heartbeat_;
  std::unordered_map<JobID, rpc::JobInfo> jobs_;
  uint32_t next_job_id_ = 1;
};

}  // namespace orb::gcs

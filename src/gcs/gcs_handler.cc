#include "gcs/gcs_handler.h"

#include <arpa/inet.h>
#include <algorithm>
#include <spdlog/spdlog.h>

#include "common/call_stream_routes.h"
#include "common/metrics.h"
#include "common/resources.h"
#include "common/unix_time.h"

namespace orb::gcs {
namespace {

constexpr char kNodeTable[] = "node";
constexpr char kJobTable[] = "job";
constexpr char kMetaTable[] = "meta";
constexpr char kKvTable[] = "kv";

// KV keys are "<namespace>\0<key>", so namespaces never see each other's keys.
std::string KvKey(const std::string& ns, const std::string& key) { return ns + '\0' + key; }

grpc::Status Internal(const absl::Status& s) { return ToGrpc(s); }

// Why a node's registration cannot be taken, or "" when it can.
std::string InvalidNode(const rpc::NodeInfo& node) {
  in6_addr unused;
  if (::inet_pton(AF_INET, node.ip().c_str(), &unused) != 1 && ::inet_pton(AF_INET6, node.ip().c_str(), &unused) != 1) {
    return "ip '" + node.ip().substr(0, 64) + "' is not an IPv4 or IPv6 address";
  }
  if (node.raylet_port() < 1 || node.raylet_port() > 65535) {
    return "raylet_port " + std::to_string(node.raylet_port()) + " is not a port (1-65535)";
  }
  if (node.object_manager_port() < 0 || node.object_manager_port() > 65535) {
    return "object_manager_port " + std::to_string(node.object_manager_port()) + " is not a port";
  }
  absl::Status resources = ResourceSet::Validate({node.resources_total().begin(), node.resources_total().end()});
  if (!resources.ok()) return std::string(resources.message());
  return "";
}

// A live node's raylet call stream, "ip:port" (empty: none).
std::string CallStreamOf(const rpc::NodeInfo& node) {
  if (node.state() != rpc::NodeInfo::ALIVE) return "";
  return CallStreamBeside(node.ip() + ":" + std::to_string(node.raylet_port()), node.call_stream_port());
}

}  // namespace

GcsHandler::GcsHandler(std::unique_ptr<TableStore> store, EventLoop* loop, GcsOptions options)
    : store_(std::move(store)), loop_(loop), options_(options) {
  NodeDirectoryAccess access;
  access.raylet_of = [this](const std::string& node_id) -> std::string {
    auto it = nodes_.find(NodeID::FromBinary(node_id));
    if (it == nodes_.end() || it->second.state() != rpc::NodeInfo::ALIVE) return "";
    return it->second.ip() + ":" + std::to_string(it->second.raylet_port());
  };
  access.call_stream_at = [this](const std::string& raylet_address) -> std::string {
    for (const auto& [id, node] : nodes_) {
      if (node.ip() + ":" + std::to_string(node.raylet_port()) == raylet_address) return CallStreamOf(node);
    }
    return "";
  };
  access.next_raylet = [this]() -> std::string {
    std::vector<std::string> live;
    for (const auto& [id, node] : nodes_) {
      if (node.state() == rpc::NodeInfo::ALIVE) live.push_back(node.ip() + ":" + std::to_string(node.raylet_port()));
    }
    if (live.empty()) return "";
    std::sort(live.begin(), live.end());
    return live[raylet_turn_++ % live.size()];
  };
  PlacementGroupAccess pg_access;
  pg_access.raylet_of = access.raylet_of;
  pg_access.call_stream_of = [this](const std::string& node_id) -> std::string {
    auto it = nodes_.find(NodeID::FromBinary(node_id));
    return it == nodes_.end() ? "" : CallStreamOf(it->second);
  };
  pg_access.live_nodes = [this] {
    std::vector<NodeCapacity> live;
    for (const auto& [id, node] : nodes_) {
      if (node.state() == rpc::NodeInfo::ALIVE) {
        auto gpus = node.resources_total().find("GPU");
        live.push_back({node.node_id(), ResourceSet::FromAnyMap(node.resources_available()),
                        gpus != node.resources_total().end() && gpus->second > 0});
      }
    }
    return live;
  };
  pg_access.on_removed = [this](const std::string& pg_id) { actors_->OnPlacementGroupRemoved(pg_id); };
  ActorManagerOptions actor_options;
  actor_options.token = options_.token;
  actor_options.max_dead_actors = options_.max_dead_actors;
  actors_ = std::make_unique<ActorManager>(store_.get(), loop_, std::move(access), actor_options);
  placement_groups_ = std::make_unique<PlacementGroupManager>(store_.get(), loop_, std::move(pg_access), options_.token);
}

absl::StatusOr<std::unique_ptr<GcsHandler>> GcsHandler::Create(std::unique_ptr<TableStore> store, EventLoop* loop,
                                                               GcsOptions options) {
  std::unique_ptr<GcsHandler> handler(new GcsHandler(std::move(store), loop, options));
  if (auto s = handler->Load(); !s.ok()) return s;
  return handler;
}

absl::Status GcsHandler::Load() {
  auto nodes = store_->Scan(kNodeTable, "");
  if (!nodes.ok()) return nodes.status();
  for (const auto& [key, value] : *nodes) {
    rpc::NodeInfo node;
    if (!node.ParseFromString(value)) return absl::DataLossError("corrupt node record in GCS storage");
    nodes_[NodeID::FromBinary(node.node_id())] = std::move(node);
  }
  auto cluster_id = store_->Get(kMetaTable, "cluster_id");
  if (!cluster_id.ok()) return cluster_id.status();
  if (cluster_id->has_value()) {
    cluster_id_ = **cluster_id;
  } else {
    cluster_id_ = NodeID::FromRandom().Hex();
    if (auto s = store_->Put(kMetaTable, "cluster_id", cluster_id_); !s.ok()) return s;
  }
  auto jobs = store_->Scan(kJobTable, "");
  if (!jobs.ok()) return jobs.status();
  for (const auto& [key, value] : *jobs) {
    rpc::JobInfo job;
    if (!job.ParseFromString(value)) return absl::DataLossError("corrupt job record in GCS storage");
    jobs_[JobID::FromBinary(job.job_id())] = std::move(job);
  }
  if (auto s = actors_->Load(); !s.ok()) return s;
  if (auto s = placement_groups_->Load(); !s.ok()) return s;
  auto counter = store_->Get(kMetaTable, "next_job_id");
  if (!counter.ok()) return counter.status();
  if (counter->has_value()) next_job_id_ = static_cast<uint32_t>(std::stoul(**counter));
  spdlog::info("GCS loaded {} nodes, {} jobs from storage", nodes_.size(), jobs_.size());
  return absl::OkStatus();
}

absl::Status GcsHandler::SaveNode(const rpc::NodeInfo& node) {
  return store_->Put(kNodeTable, node.node_id(), node.SerializeAsString());
}

void GcsHandler::PublishNode(const rpc::NodeInfo& node) {
  rpc::PubMessage message;
  message.set_channel(rpc::NODE_CHANNEL);
  *message.mutable_node() = node;
  publisher_.Publish(std::move(message));
}

void GcsHandler::HandleRegisterNode(const rpc::RegisterNodeRequest& req, rpc::RegisterNodeReply* reply,
                                    SendReply send) {
  NodeID id = NodeID::FromBinary(req.node().node_id());
  if (id.IsNil()) return send(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "node_id must be 16 bytes"));
  if (std::string why = InvalidNode(req.node()); !why.empty()) {
    return send(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "cannot register node " + id.Hex() + ": " + why));
  }
  auto existing = nodes_.find(id);
  if (existing != nodes_.end() && existing->second.state() == rpc::NodeInfo::DEAD) {
    return send(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                             "node " + id.Hex() + " was declared dead; a restarted raylet joins as a new node"));
  }
  rpc::NodeInfo node = req.node();
  node.set_state(rpc::NodeInfo::ALIVE);
  if (node.start_time_ms() == 0) node.set_start_time_ms(UnixMillis());
  if (auto s = SaveNode(node); !s.ok()) return send(Internal(s));
  if (existing == nodes_.end()) {
    spdlog::info("node {} registered at {}:{} [node_id={}]", id.Hex(), node.ip(), node.raylet_port(), id.Hex());
  }
  nodes_[id] = node;
  PublishNode(node);
  SeedGossip(node);
  reply->set_cluster_id(cluster_id_);
  send(grpc::Status::OK);
}

void GcsHandler::MarkNodeDead(rpc::NodeInfo& node, const std::string& reason) {
  node.set_state(rpc::NodeInfo::DEAD);
  node.set_end_time_ms(UnixMillis());
  node.set_death_reason(reason);
  node.mutable_resources_available()->clear();
  node.clear_pending_demand();
  if (auto s = SaveNode(node); !s.ok()) spdlog::error("cannot persist death of node: {}", s.ToString());
  spdlog::warn("node {} is dead: {} [node_id={}]", NodeID::FromBinary(node.node_id()).Hex(), reason,
               NodeID::FromBinary(node.node_id()).Hex());
  PublishNode(node);
  if (gossip_) gossip_->DeclareDead(node.node_id());
  actors_->OnNodeDead(node.node_id());
  placement_groups_->OnNodeDead(node.node_id());
}

void GcsHandler::StartGossip(const std::string& self_address, gossip::GossipTransport* transport) {
  gossip::GossipOptions options = options_.gossip;
  options.cluster_id = cluster_id_;
  gossip_ = std::make_unique<gossip::GossipNode>("", self_address, "", options, &directory_, transport,
                                                 gossip::SteadyClock());
  gossip_->on_change = [this](uint32_t index) { SyncNodeFromGossip(index); };
  for (const auto& [id, node] : nodes_) {
    if (node.state() == rpc::NodeInfo::ALIVE) SeedGossip(node);
  }
  actors_->Start();
  placement_groups_->Start();
  loop_->RunEvery(std::chrono::milliseconds(10), [this] {
    gossip_->Tick();
    return true;
  });
}

gossip::GossipNode::Received GcsHandler::DeliverGossip(const std::string& bytes) {
  return gossip_ ? gossip_->ReceiveBytes(bytes) : gossip::GossipNode::Received::kIgnored;
}

void GcsHandler::SeedGossip(const rpc::NodeInfo& node) {
  if (!gossip_) return;
  auto payload = std::make_shared<rpc::GossipNodeState>();
  payload->set_address(node.ip() + ":" + std::to_string(node.raylet_port()));
  if (node.object_manager_port() > 0) {
    payload->set_object_manager_address(node.ip() + ":" + std::to_string(node.object_manager_port()));
  }
  *payload->mutable_resources_total() = node.resources_total();
  *payload->mutable_resources_available() = node.resources_available();
  *payload->mutable_labels() = node.labels();
  // The lowest key: the node's own entry replaces it at the first exchange.
  gossip_->Seed(node.node_id(), gossip::PackKey(0, gossip::MemberState::kAlive, 0), std::move(payload));
}

void GcsHandler::SyncNodeFromGossip(uint32_t index) {
  const gossip::MemberSlot* slot = gossip_->view().Get(index);
  const std::string& binary = gossip_->directory().id(index);
  NodeID id = NodeID::FromBinary(binary);
  if (!slot || id.IsNil()) return;
  gossip::MemberState state = gossip::KeyState(slot->key);
  auto it = nodes_.find(id);
  if (state == gossip::MemberState::kDead) {
    if (it != nodes_.end() && it->second.state() == rpc::NodeInfo::ALIVE) {
      MarkNodeDead(it->second, "stopped answering probes and did not refute the suspicion within " +
                                   std::to_string(options_.gossip.suspicion_timeout.count()) + " ms");
    }
    return;
  }
  const rpc::GossipNodeState& payload = *slot->payload;
  if (it == nodes_.end()) {
    // A live node of this cluster with no record here (one that did not survive a
    // restart): take it back from its entry.
    rpc::NodeInfo node;
    node.set_node_id(binary);
    auto colon = payload.address().rfind(':');
    if (colon == std::string::npos) return;
    node.set_ip(payload.address().substr(0, colon));
    node.set_raylet_port(std::atoi(payload.address().c_str() + colon + 1));
    auto stream_colon = payload.object_manager_address().rfind(':');
    if (stream_colon != std::string::npos) {
      node.set_object_manager_port(std::atoi(payload.object_manager_address().c_str() + stream_colon + 1));
    }
    *node.mutable_resources_total() = payload.resources_total();
    *node.mutable_labels() = payload.labels();
    node.set_start_time_ms(UnixMillis());
    if (auto s = SaveNode(node); !s.ok()) spdlog::error("cannot persist node learned by gossip: {}", s.ToString());
    spdlog::info("node {} at {} learned by gossip", id.Hex(), payload.address());
    it = nodes_.emplace(id, std::move(node)).first;
    PublishNode(it->second);
  } else if (it->second.state() == rpc::NodeInfo::DEAD) {
    gossip_->DeclareDead(binary);  // dead stays dead
    return;
  }
  rpc::NodeInfo& node = it->second;
  *node.mutable_resources_available() = payload.resources_available();
  *node.mutable_pending_demand() = payload.pending_demand();
  node.set_object_store_used_bytes(payload.object_store_used_bytes());
}

void GcsHandler::HandleUnregisterNode(const rpc::UnregisterNodeRequest& req, rpc::UnregisterNodeReply*,
                                      SendReply send) {
  auto it = nodes_.find(NodeID::FromBinary(req.node_id()));
  if (it == nodes_.end()) return send(grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown node"));
  if (it->second.state() == rpc::NodeInfo::ALIVE) {
    MarkNodeDead(it->second, req.reason().empty() ? "unregistered" : req.reason());
  }
  send(grpc::Status::OK);
}

void GcsHandler::HandleGetAllNodes(const rpc::GetAllNodesRequest&, rpc::GetAllNodesReply* reply, SendReply send) {
  for (const auto& [id, node] : nodes_) *reply->add_nodes() = node;
  send(grpc::Status::OK);
}

void GcsHandler::HandleGetMetrics(const rpc::GetMetricsRequest&, rpc::GetMetricsReply* reply, SendReply send) {
  for (const auto& [name, value] : CounterSnapshot()) (*reply->mutable_metrics())[name] = value;
  if (gossip_) {
    for (const auto& [name, value] : gossip::GossipMetrics(gossip_->stats())) (*reply->mutable_metrics())[name] = value;
  }
  reply->set_metrics_export_port(metrics_export_port_);
  reply->set_dashboard_port(dashboard_port_);
  reply->set_call_stream_port(call_stream_port_);
  send(grpc::Status::OK);
}

void GcsHandler::HandleAddTaskEvents(const rpc::AddTaskEventsRequest& req, rpc::AddTaskEventsReply*, SendReply send) {
  task_events_.Add(req);
  send(grpc::Status::OK);
}

void GcsHandler::HandleListTasks(const rpc::ListTasksRequest& req, rpc::ListTasksReply* reply, SendReply send) {
  auto listed = task_events_.List(req);
  if (!listed.ok()) return send(ToGrpc(listed.status()));
  *reply = std::move(*listed);
  send(grpc::Status::OK);
}

std::string GcsHandler::MetricsText() const {
  prom::Exposition out;
  std::map<std::string, int64_t> nodes{{"ALIVE", 0}, {"DEAD", 0}};
  for (const auto& [id, node] : nodes_) ++nodes[rpc::NodeInfo::State_Name(node.state())];
  for (const auto& [state, n] : nodes) out.Gauge("orb_cluster_nodes", "nodes the GCS knows, by state", n, {{"state", state}});
  std::map<std::string, int64_t> jobs{{"RUNNING", 0}, {"FINISHED", 0}};
  for (const auto& [id, job] : jobs_) ++jobs[job.is_dead() ? "FINISHED" : "RUNNING"];
  for (const auto& [state, n] : jobs) out.Gauge("orb_jobs", "jobs the GCS knows, by state", n, {{"state", state}});
  for (const auto& [state, n] : actors_->CountByState()) {
    out.Gauge("orb_actors", "actors the GCS knows, by state", n, {{"state", state}});
  }
  for (const auto& [state, n] : placement_groups_->CountByState()) {
    out.Gauge("orb_placement_groups", "placement groups, by state", n, {{"state", state}});
  }
  task_events_.AppendMetrics(&out);
  if (gossip_) gossip::AppendGossipMetrics(*gossip_, &out);
  AppendProcessMetrics(&out);
  return out.Text();
}

void GcsHandler::HandleAddJob(const rpc::AddJobRequest& req, rpc::AddJobReply* reply, SendReply send) {
  JobID id = JobIDFromInt(next_job_id_);
  if (auto s = store_->Put(kMetaTable, "next_job_id", std::to_string(next_job_id_ + 1)); !s.ok()) {
    return send(Internal(s));
  }
  ++next_job_id_;
  spdlog::info("job {} started by a driver at {} pid {} [job_id={}]", id.Hex(), req.job().driver_ip(),
               req.job().driver_pid(), id.Hex());
  rpc::JobInfo job = req.job();
  job.set_job_id(id.Binary());
  job.set_start_time_ms(UnixMillis());
  job.set_is_dead(false);
  if (auto s = store_->Put(kJobTable, id.Binary(), job.SerializeAsString()); !s.ok()) return send(Internal(s));
  jobs_[id] = job;
  rpc::PubMessage message;
  message.set_channel(rpc::JOB_CHANNEL);
  *message.mutable_job() = job;
  publisher_.Publish(std::move(message));
  reply->set_job_id(id.Binary());
  send(grpc::Status::OK);
}

void GcsHandler::HandleMarkJobFinished(const rpc::MarkJobFinishedRequest& req, rpc::MarkJobFinishedReply*,
                                       SendReply send) {
  auto it = jobs_.find(JobID::FromBinary(req.job_id()));
  if (it == jobs_.end()) return send(grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown job"));
  it->second.set_is_dead(true);
  it->second.set_end_time_ms(UnixMillis());
  if (auto s = store_->Put(kJobTable, req.job_id(), it->second.SerializeAsString()); !s.ok()) {
    return send(Internal(s));
  }
  spdlog::info("job {} finished [job_id={}]", it->first.Hex(), it->first.Hex());
  rpc::PubMessage message;
  message.set_channel(rpc::JOB_CHANNEL);
  *message.mutable_job() = it->second;
  publisher_.Publish(std::move(message));
  actors_->OnJobFinished(req.job_id());
  placement_groups_->OnJobFinished(req.job_id());
  send(grpc::Status::OK);
}

void GcsHandler::HandleReportWorkerFailure(const rpc::ReportWorkerFailureRequest& req,
                                           rpc::ReportWorkerFailureReply* reply, SendReply send) {
  if (WorkerID::FromBinary(req.worker_id()).IsNil()) {
    return send(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "ReportWorkerFailure: worker_id is not a worker ID"));
  }
  // Raylets elsewhere reclaim what it held there: leases, and requests for more.
  rpc::PubMessage death;
  death.set_channel(rpc::WORKER_CHANNEL);
  *death.mutable_worker_failure() = req;
  publisher_.Publish(std::move(death));
  if (req.is_driver()) {
    // A driver that died without Shutdown(): its job is over, and so are its actors.
    auto job = jobs_.find(JobID::FromBinary(req.job_id()));
    if (job != jobs_.end() && !job->second.is_dead()) {
      rpc::MarkJobFinishedRequest finish;
      finish.set_job_id(req.job_id());
      auto ignored = std::make_shared<rpc::MarkJobFinishedReply>();
      HandleMarkJobFinished(finish, ignored.get(), [ignored](grpc::Status) {});
    }
  }
  actors_->HandleReportWorkerFailure(req, reply, std::move(send));
}

void GcsHandler::AnswerParkedCalls() {
  publisher_.ExpireAll();
  log_publisher_.ExpireAll();
  actors_->AnswerParkedCalls();
  placement_groups_->AnswerParkedCalls();
}

void GcsHandler::HandleGetAllJobs(const rpc::GetAllJobsRequest&, rpc::GetAllJobsReply* reply, SendReply send) {
  for (const auto& [id, job] : jobs_) *reply->add_jobs() = job;
  send(grpc::Status::OK);
}

void GcsHandler::HandleGetJob(const rpc::GetJobRequest& req, rpc::GetJobReply* reply, SendReply send) {
  auto it = jobs_.find(JobID::FromBinary(req.job_id()));
  reply->set_found(it != jobs_.end());
  if (it != jobs_.end()) *reply->mutable_job() = it->second;
  send(grpc::Status::OK);
}

void GcsHandler::HandleKvPut(const rpc::KvPutRequest& req, rpc::KvPutReply* reply, SendReply send) {
  if (req.key().empty()) return send(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "key must not be empty"));
  std::string key = KvKey(req.namespace_(), req.key());
  auto existing = store_->Get(kKvTable, key);
  if (!existing.ok()) return send(Internal(existing.status()));
  reply->set_added(!existing->has_value());
  if (existing->has_value() && !req.overwrite()) return send(grpc::Status::OK);
  if (auto s = store_->Put(kKvTable, key, req.value()); !s.ok()) return send(Internal(s));
  send(grpc::Status::OK);
}

void GcsHandler::HandleKvGet(const rpc::KvGetRequest& req, rpc::KvGetReply* reply, SendReply send) {
  auto value = store_->Get(kKvTable, KvKey(req.namespace_(), req.key()));
  if (!value.ok()) return send(Internal(value.status()));
  reply->set_found(value->has_value());
  if (value->has_value()) reply->set_value(**value);
  send(grpc::Status::OK);
}

void GcsHandler::HandleKvDelete(const rpc::KvDeleteRequest& req, rpc::KvDeleteReply* reply, SendReply send) {
  std::string key = KvKey(req.namespace_(), req.key());
  int64_t deleted = 0;
  if (req.by_prefix()) {
    auto rows = store_->Scan(kKvTable, key);
    if (!rows.ok()) return send(Internal(rows.status()));
    for (const auto& row : *rows) {
      if (auto s = store_->Delete(kKvTable, row.first); !s.ok()) return send(Internal(s));
      ++deleted;
    }
  } else {
    auto existing = store_->Get(kKvTable, key);
    if (!existing.ok()) return send(Internal(existing.status()));
    if (existing->has_value()) {
      if (auto s = store_->Delete(kKvTable, key); !s.ok()) return send(Internal(s));
      deleted = 1;
    }
  }
  reply->set_deleted(deleted);
  send(grpc::Status::OK);
}

void GcsHandler::HandleKvKeys(const rpc::KvKeysRequest& req, rpc::KvKeysReply* reply, SendReply send) {
  std::string prefix = KvKey(req.namespace_(), req.prefix());
  auto rows = store_->Scan(kKvTable, prefix);
  if (!rows.ok()) return send(Internal(rows.status()));
  size_t ns_len = req.namespace_().size() + 1;
  for (const auto& row : *rows) reply->add_keys(row.first.substr(ns_len));
  send(grpc::Status::OK);
}

void GcsHandler::HandlePoll(const rpc::PollRequest& req, rpc::PollReply* reply, SendReply send) {
  auto answer = [reply, send](rpc::PollReply result) {
    *reply = std::move(result);
    send(grpc::Status::OK);
  };
  int wait_ms = std::min(req.wait_ms(), 30000);
  bool logs = std::find(req.channels().begin(), req.channels().end(), rpc::LOG_CHANNEL) != req.channels().end();
  if (logs && req.channels_size() > 1) {
    return send(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "LOG_CHANNEL is polled alone"));
  }
  Publisher& publisher = logs ? log_publisher_ : publisher_;
  uint64_t id = publisher.Poll(req, answer);
  if (id != 0) loop_->RunAfter(std::chrono::milliseconds(wait_ms), [&publisher, id] { publisher.Expire(id); });
}

void GcsHandler::HandlePublishLogs(const rpc::PublishLogsRequest& req, rpc::PublishLogsReply*, SendReply send) {
  for (const rpc::LogBatch& batch : req.batches()) {
    rpc::PubMessage message;
    message.set_channel(rpc::LOG_CHANNEL);
    *message.mutable_log() = batch;
    message.mutable_log()->set_actor_class(actors_->ClassOfWorker(batch.worker_id()));
    log_publisher_.Publish(std::move(message));
  }
  send(grpc::Status::OK);
}

}  // namespace orb::gcs

// The raylet's observability: its /metrics (the node's scheduler, workers, object store,
// transfers, gossip and GPUs, and its workers' metrics merged in), the worker list of
// `orb list workers`, and the object transfers it reports for the timeline.
#include <spdlog/spdlog.h>

#include <future>

#include "common/http_endpoint.h"
#include "common/metric_samples.h"
#include "common/metrics.h"
#include "core_worker_service.grpc.pb.h"
#include "raylet/gpu_metrics.h"
#include "raylet/raylet.h"

namespace orb {
namespace {

const char* WorkerStateName(WorkerProcess::State state) {
  switch (state) {
    case WorkerProcess::State::kStarting: return "STARTING";
    case WorkerProcess::State::kIdle: return "IDLE";
    case WorkerProcess::State::kLeased: return "LEASED";
  }
  return "?";
}

}  // namespace

prom::Exposition Raylet::NodeMetrics() const {
  prom::Exposition out;
  out.SetCommonLabels({{"node_id", node_id_.Hex()}});
  const LeaseStats& leases = lease_granter_->stats();
  out.Counter("orb_lease_requests_total", "worker lease requests this raylet received", leases.requests);
  out.Counter("orb_leases_granted_total", "worker leases granted on this node", leases.granted);
  out.Counter("orb_leases_spilled_total", "lease requests sent on to another node (spillback)", leases.spilled);
  out.Counter("orb_leases_replaced_total",
              "queued lease requests sent on to a node with room when the cluster view changed", leases.replaced);
  out.Counter("orb_lease_requests_canceled_total", "queued lease requests their requester cancelled",
              leases.canceled);
  out.Counter("orb_leases_infeasible_total", "lease requests no node could ever hold", leases.infeasible);
  for (const auto& [shape, n] : leases.infeasible_shapes) {
    out.Counter("orb_scheduler_infeasible_total", "infeasible lease requests by resource shape", n, {{"shape", shape}});
  }
  out.Gauge("orb_leases_active", "worker leases held on this node", lease_granter_->num_leases());
  out.Gauge("orb_leases_queued", "lease requests waiting on this node", lease_granter_->num_queued());
  std::map<std::string, int64_t> workers{{"STARTING", 0}, {"IDLE", 0}, {"LEASED", 0}, {"DRIVER", 0}};
  for (const WorkerProcess& w : worker_pool_->All()) ++workers[w.is_driver ? "DRIVER" : WorkerStateName(w.state)];
  for (const auto& [state, n] : workers) {
    out.Gauge("orb_workers", "worker processes (and drivers) on this node, by state", n, {{"state", state}});
  }
  for (const auto& [name, amount] : lease_granter_->total().ToMap()) {
    out.Gauge("orb_resources_capacity", "resources this node offers", amount, {{"resource", name}});
  }
  for (const auto& [name, amount] : lease_granter_->available().ToMap()) {
    out.Gauge("orb_resources_available", "resources free on this node", amount, {{"resource", name}});
  }
  out.Gauge("orb_object_store_capacity_bytes", "this node's shared-memory object store", object_store_.capacity());
  out.Gauge("orb_object_store_used_bytes", "bytes of objects in the store's memory", object_store_.used());
  out.Gauge("orb_object_store_objects", "objects the store holds (in memory or spilled)", object_store_.num_objects());
  SpillStats spill = object_store_.spill_stats();
  out.Counter("orb_object_store_spilled_bytes_total", "bytes of objects spilled to disk", spill.spilled_bytes_total);
  out.Counter("orb_object_store_spilled_objects_total", "objects spilled to disk", spill.spilled_objects_total);
  out.Counter("orb_object_store_restored_bytes_total", "bytes of spilled objects read back", spill.restored_bytes_total);
  out.Counter("orb_object_store_evicted_objects_total", "copies dropped from memory to make room",
              spill.evicted_objects_total);
  out.Counter("orb_object_store_evicted_bytes_total", "bytes of copies dropped from memory to make room",
              spill.evicted_bytes_total);
  out.Gauge("orb_object_store_spilled_bytes", "bytes of live objects on disk", spill.bytes_on_disk);
  out.Counter("orb_object_transfer_received_bytes_total", "object bytes pulled from other nodes",
              object_puller_->bytes_pulled_total());
  out.Counter("orb_object_pulls_total", "objects pulled from other nodes", object_puller_->pulls_total());
  out.Counter("orb_object_pull_failures_total", "pulls from other nodes that failed",
              object_puller_->pull_failures_total());
  if (gossip_) gossip::AppendGossipMetrics(*gossip_, &out);
  AppendProcessMetrics(&out);
  AppendGpuMetrics(&out);
  return out;
}

std::vector<std::pair<std::string, std::string>> Raylet::WorkerEndpoints() const {
  std::vector<std::pair<std::string, std::string>> endpoints;
  for (const WorkerProcess& w : worker_pool_->Registered()) endpoints.emplace_back(w.id.Hex(), WorkerAddress(w));
  return endpoints;
}

absl::StatusOr<std::string> Raylet::MetricsText() {
  // The node's own on the loop; each worker's asked from here (this is an HTTP thread).
  auto collected = RunOnLoop(&loop_, [this] { return std::make_pair(NodeMetrics(), WorkerEndpoints()); },
                             std::chrono::seconds(5));
  if (!collected) return absl::UnavailableError("the raylet did not answer within 5 s");
  auto& [out, endpoints] = *collected;
  CallOptions quick;
  quick.timeout = std::chrono::milliseconds(1000);
  std::vector<std::future<absl::StatusOr<rpc::GetWorkerMetricsReply>>> replies;
  for (const auto& endpoint : endpoints) {
    auto promise = std::make_shared<std::promise<absl::StatusOr<rpc::GetWorkerMetricsReply>>>();
    replies.push_back(promise->get_future());
    worker_metric_clients_.Get(endpoint.second)
        ->Call<rpc::GetWorkerMetricsReply>(
            ORB_RPC(GetWorkerMetrics), rpc::GetWorkerMetricsRequest(),
            [promise](const absl::Status& status, rpc::GetWorkerMetricsReply&& reply) {
              if (status.ok()) {
                promise->set_value(std::move(reply));
              } else {
                promise->set_value(status);
              }
            },
            quick);
  }
  for (size_t i = 0; i < replies.size(); ++i) {
    auto reply = replies[i].get();
    if (!reply.ok()) continue;  // exiting, or busy past the deadline: its series miss this scrape
    for (const auto& sample : reply->samples()) AddSample(sample, {{"worker_id", endpoints[i].first}}, &out);
  }
  return out.Text();
}

void Raylet::HandleListWorkers(const rpc::ListWorkersRequest&, rpc::ListWorkersReply* reply, SendReply send) {
  for (const WorkerProcess& w : worker_pool_->All()) {
    rpc::WorkerInfo* info = reply->add_workers();
    info->set_worker_id(w.id.Binary());
    info->set_job_id(w.job.Binary());
    info->set_pid(w.pid);
    info->set_state(w.is_driver ? "DRIVER" : WorkerStateName(w.state));
    info->set_is_driver(w.is_driver);
    info->set_language(w.kind.language);
    for (const auto& [k, v] : lease_granter_->ResourcesLeasedTo(w.id).ToMap()) (*info->mutable_lease_resources())[k] = v;
    info->set_start_time_ms(w.start_time_ms);
    info->set_log_file(w.log_file);
    info->set_port(w.port);
    if (cgroups_ && !w.is_driver) {
      CgroupLimits limits = cgroups_->LimitsOf(w.id);
      info->set_cpu_limit(limits.cpus);
      info->set_memory_limit_bytes(static_cast<int64_t>(limits.memory_bytes));
      if (auto usage = cgroups_->Usage(w.id); usage.ok()) {
        info->set_cpu_seconds(usage->cpu_seconds);
        info->set_memory_bytes(static_cast<int64_t>(usage->memory_bytes));
      }
    }
  }
  send(grpc::Status::OK);
}

void Raylet::ReportTransfers() {
  std::vector<CompletedPull> pulls = object_puller_->TakeCompleted();
  if (pulls.empty()) return;
  rpc::AddTaskEventsRequest request;
  for (const CompletedPull& pull : pulls) {
    rpc::ObjectTransferEvent* t = request.add_transfers();
    t->set_object_id(pull.id.Binary());
    auto source = node_of_stream_.find(pull.source_stream);
    if (source != node_of_stream_.end()) t->set_from_node_id(source->second.Binary());
    t->set_to_node_id(node_id_.Binary());
    t->set_bytes(static_cast<int64_t>(pull.bytes));
    t->set_start_time_ns(pull.start_ns);
    t->set_end_time_ns(pull.end_ns);
  }
  gcs_->Call<rpc::AddTaskEventsReply>(ORB_RPC(AddTaskEvents), request,
                                       [](const absl::Status& status, rpc::AddTaskEventsReply&&) {
                                         if (!status.ok()) spdlog::debug("transfers not reported: {}", status.ToString());
                                       });
}

}  // namespace orb

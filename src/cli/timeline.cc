// `orb timeline`: the tasks the GCS remembers as a Chrome trace (chrome://tracing,
// Perfetto): a process per node, a thread per worker, a complete event ("X") per task
// run, and object transfers on a row of their own. And `orb metrics targets`: where
// Prometheus scrapes the cluster.
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "common/rpc.h"
#include "common/session.h"
#include "common/state_client.h"
#include "common/state_rows.h"
#include "gcs_service.grpc.pb.h"

namespace orb::cli {
namespace {

constexpr int kTransferThread = 0;  // the row of object transfers in each node's process

int WriteOut(const std::string& output, const std::string& text, const std::string& command) {
  if (output.empty() || output == "-") {
    std::cout << text << "\n";
    return 0;
  }
  std::ofstream out(output);
  out << text << "\n";
  if (!out) {
    std::cerr << "orb " << command << ": cannot write " << output << "\n";
    return 1;
  }
  return 0;
}

// Chrome trace events of `history`: a process per node, a thread per worker.
nlohmann::json TraceOf(const rpc::ListTasksReply& history) {
  nlohmann::json events = nlohmann::json::array();
  std::map<std::string, int> node_pids;  // node hex -> trace pid
  auto pid_of = [&](const std::string& node) {
    auto [it, added] = node_pids.emplace(node, static_cast<int>(node_pids.size()) + 1);
    if (added) {
      events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", it->second},
                        {"args", {{"name", "node " + (node.empty() ? std::string("?") : node.substr(0, 8))}}}});
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", it->second}, {"tid", kTransferThread},
                        {"args", {{"name", "object transfers"}}}});
    }
    return it->second;
  };
  std::map<std::pair<int, int>, bool> named_threads;
  for (const auto& task : history.tasks()) {
    auto start = task.state_times_ns().find("RUNNING");
    if (start == task.state_times_ns().end()) continue;  // never ran (yet)
    nlohmann::json row = TaskRow(task);
    int64_t begin_ns = start->second;
    int64_t end_ns = task.end_time_ns() > 0 ? task.end_time_ns() : begin_ns;
    int pid = pid_of(row["node_id"].get<std::string>());
    int tid = task.worker_pid();
    if (!named_threads[{pid, tid}]) {
      named_threads[{pid, tid}] = true;
      std::string worker = row["worker_id"].get<std::string>();
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid},
                        {"args", {{"name", "worker " + worker.substr(0, 8) + " (pid " + std::to_string(tid) + ")"}}}});
    }
    nlohmann::json args = {{"task_id", row["task_id"]}, {"attempt", task.attempt()}, {"state", row["state"]},
                           {"job_id", row["job_id"]}};
    if (!row["actor_id"].get<std::string>().empty()) args["actor_id"] = row["actor_id"];
    if (task.has_error()) args["error"] = row["error_type"].get<std::string>() + ": " + task.error().message();
    events.push_back({{"ph", "X"}, {"cat", task.type()}, {"name", task.name()}, {"pid", pid}, {"tid", tid},
                      {"ts", begin_ns / 1000.0}, {"dur", (end_ns - begin_ns) / 1000.0}, {"args", args}});
  }
  for (const auto& t : history.transfers()) {
    int pid = pid_of(HexOrEmpty(t.to_node_id()));
    std::string from = HexOrEmpty(t.from_node_id());
    events.push_back({{"ph", "X"}, {"cat", "transfer"},
                      {"name", "transfer " + HexOrEmpty(t.object_id()).substr(0, 8)}, {"pid", pid},
                      {"tid", kTransferThread}, {"ts", t.start_time_ns() / 1000.0},
                      {"dur", (t.end_time_ns() - t.start_time_ns()) / 1000.0},
                      {"args", {{"object_id", HexOrEmpty(t.object_id())}, {"bytes", t.bytes()},
                                {"from_node_id", from}, {"to_node_id", HexOrEmpty(t.to_node_id())}}}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace

int Timeline(const std::string& given, const std::string& output) {
  std::string address = ResolveClusterAddress(given, "timeline");
  if (address.empty()) return 1;
  auto history = FetchTaskHistory(address, FindTokenForAddress(address));
  if (!history.ok()) {
    std::cerr << "orb timeline: " << history.status().message() << "\n";
    return 1;
  }
  if (history->dropped_events() > 0) {
    std::cerr << "orb timeline: warning: " << history->dropped_events() << " task events were dropped\n";
  }
  int rc = WriteOut(output, TraceOf(*history).dump(), "timeline");
  if (rc == 0 && !output.empty() && output != "-") {
    std::cerr << "orb timeline: wrote " << output << " (open it in https://ui.perfetto.dev or chrome://tracing)\n";
  }
  return rc;
}

int MetricsTargets(const std::string& given, const std::string& output) {
  std::string address = ResolveClusterAddress(given, "metrics targets");
  if (address.empty()) return 1;
  RpcClient<rpc::GcsService> gcs(address, FindTokenForAddress(address));
  CallOptions call;
  call.timeout = std::chrono::milliseconds(5000);
  auto metrics = gcs.CallSync<rpc::GetMetricsReply>(ORB_RPC(GetMetrics), rpc::GetMetricsRequest(), call);
  auto nodes = gcs.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest(), call);
  if (!metrics.ok() || !nodes.ok()) {
    std::cerr << "orb metrics targets: cannot reach the GCS at " << address << ": "
              << (metrics.ok() ? nodes.status() : metrics.status()).message() << "\n";
    return 1;
  }
  // Prometheus's file_sd_configs format: groups of targets with their labels.
  nlohmann::json groups = nlohmann::json::array();
  if (metrics->metrics_export_port() > 0) {
    std::string host = address.substr(0, address.rfind(':'));
    groups.push_back({{"targets", {host + ":" + std::to_string(metrics->metrics_export_port())}},
                      {"labels", {{"orb_component", "gcs"}}}});
  }
  for (const auto& n : nodes->nodes()) {
    if (n.state() != rpc::NodeInfo::ALIVE || n.metrics_export_port() <= 0) continue;
    groups.push_back({{"targets", {n.ip() + ":" + std::to_string(n.metrics_export_port())}},
                      {"labels", {{"orb_component", "raylet"}, {"orb_node_id", HexOrEmpty(n.node_id())}}}});
  }
  return WriteOut(output, groups.dump(2), "metrics targets");
}

}  // namespace orb::cli

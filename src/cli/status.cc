#include <cstdio>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "autoscaler/cluster_state.h"
#include "cli/commands.h"
#include "common/client_pool.h"
#include "common/id.h"
#include "common/resources.h"
#include "common/rpc.h"
#include "common/session.h"
#include "gcs_service.grpc.pb.h"
#include "raylet_service.grpc.pb.h"

namespace orb::cli {
namespace {

std::string Amount(const std::string& name, double value) {
  char buf[64];
  if (name == "memory" || name == "object_store_memory") {
    std::snprintf(buf, sizeof(buf), "%.2fGiB", value / (1 << 30));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f", value);
  }
  return buf;
}

// The autoscaler's view, as it last published it: nodes launching or idle, pending
// launches, what cannot be placed and its last decisions with their reasons.
void PrintAutoscaler(RpcClient<rpc::GcsService>& gcs) {
  rpc::KvGetRequest get;
  get.set_namespace_(autoscaler::kKvNamespace);
  get.set_key(autoscaler::kStatusKey);
  CallOptions call;
  call.timeout = std::chrono::milliseconds(5000);
  auto reply = gcs.CallSync<rpc::KvGetReply>(ORB_RPC(KvGet), get, call);
  if (!reply.ok() || !reply->found()) return;
  auto status = nlohmann::json::parse(reply->value(), nullptr, /*allow_exceptions=*/false);
  if (!status.is_object()) return;
  std::cout << "\nAutoscaler (cluster " << status.value("cluster_name", "") << ")\n"
            << "---------------------------------------------------------------\n";
  if (status.contains("error")) std::cout << " error: " << status.value("error", "") << "\n";
  std::map<std::string, int> by_state;
  for (const auto& n : status.value("nodes", nlohmann::json::array())) {
    std::string type = n.value("type", "");
    if (type.empty()) continue;  // not launched by the autoscaler
    std::string state = n.value("state", "");
    by_state[state]++;
    std::cout << " " << n.value("id", "") << "  " << type << "  " << state;
    if (state == "idle") std::cout << " for " << n.value("idle_s", 0) << " s";
    if (state == "launching") {
      std::cout << " (" << n.value("provider_state", "pending");
      if (n.contains("reason")) std::cout << ": " << n.value("reason", "");
      std::cout << ")";
    }
    std::cout << "\n";
  }
  std::cout << "Pending launches:";
  auto pending = status.value("pending_launches", nlohmann::json::object());
  if (pending.empty()) std::cout << " (none)";
  for (const auto& [type, count] : pending.items()) std::cout << " " << count.get<int>() << " x " << type;
  std::cout << "\nCannot be placed:";
  auto infeasible = status.value("infeasible", nlohmann::json::array());
  if (infeasible.empty()) std::cout << " (nothing)\n";
  std::cout << (infeasible.empty() ? "" : "\n");
  for (const auto& line : infeasible) std::cout << " " << line.get<std::string>() << "\n";
  std::cout << "Recent decisions:\n";
  auto decisions = status.value("decisions", nlohmann::json::array());
  if (decisions.empty()) std::cout << " (none yet)\n";
  size_t first = decisions.size() > 10 ? decisions.size() - 10 : 0;
  for (size_t i = first; i < decisions.size(); ++i) {
    std::cout << " " << decisions[i].value("ago_s", 0) << " s ago: " << decisions[i].value("what", "") << "\n";
  }
}

// How each live node isolates its workers (cgroups, or why not) and its memory monitor.
void PrintIsolation(const std::vector<const rpc::NodeInfo*>& nodes, const std::string& token) {
  ClientPool<rpc::RayletService> raylets(token);
  CallOptions call;
  call.timeout = std::chrono::milliseconds(3000);
  for (const auto* n : nodes) {
    std::string raylet = n->ip() + ":" + std::to_string(n->raylet_port());
    auto stats = raylets.Get(raylet)->CallSync<rpc::GetNodeStatsReply>(ORB_RPC(GetNodeStats),
                                                                        rpc::GetNodeStatsRequest(), call);
    std::string id = NodeID::FromBinary(n->node_id()).Hex().substr(0, 8);
    if (!stats.ok()) {
      std::cout << "  " << id << " did not answer: " << stats.status().message() << "\n";
      continue;
    }
    std::cout << "  " << id << " workers: " << stats->worker_isolation() << "\n"
              << "  " << id << " memory monitor: " << stats->memory_monitor() << "\n";
  }
}

}  // namespace

int Status(const std::string& given_address) {
  std::string address = ResolveClusterAddress(given_address, "status");
  if (address.empty()) return 1;
  RpcClient<rpc::GcsService> gcs(address, FindTokenForAddress(address));
  CallOptions call;
  call.timeout = std::chrono::milliseconds(5000);
  auto reply = gcs.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest(), call);
  if (!reply.ok()) {
    std::cerr << "orb status: cannot reach the GCS at " << address << ": " << reply.status().message() << "\n";
    return 1;
  }
  std::map<std::string, double> total, used;
  std::map<std::map<std::string, double>, int64_t> demand;
  std::vector<const rpc::NodeInfo*> alive, dead;
  for (const auto& node : reply->nodes()) {
    if (node.state() != rpc::NodeInfo::ALIVE) {
      dead.push_back(&node);
      continue;
    }
    alive.push_back(&node);
    for (const auto& [k, v] : node.resources_total()) {
      if (IsNodeResource(k)) continue;  // one per node: nothing to sum
      total[k] += v;
      auto it = node.resources_available().find(k);
      used[k] += v - (it == node.resources_available().end() ? 0.0 : it->second);
    }
    total["object_store_memory"] += static_cast<double>(node.object_store_bytes());
    used["object_store_memory"] += static_cast<double>(node.object_store_used_bytes());
    for (const auto& d : node.pending_demand()) {
      demand[std::map<std::string, double>(d.shape().begin(), d.shape().end())] += d.count();
    }
  }
  std::cout << "======== Cluster status (GCS " << address << ") ========\n"
            << "Node status\n---------------------------------------------------------------\n"
            << "Alive:\n";
  if (alive.empty()) std::cout << " (none)\n";
  for (const auto* n : alive) {
    std::cout << " " << NodeID::FromBinary(n->node_id()).Hex() << "  " << n->ip() << ":" << n->raylet_port() << "\n";
  }
  PrintIsolation(alive, FindTokenForAddress(address));
  std::cout << "Dead:\n";
  if (dead.empty()) std::cout << " (none)\n";
  for (const auto* n : dead) {
    std::cout << " " << NodeID::FromBinary(n->node_id()).Hex() << "  " << n->ip() << ":" << n->raylet_port() << "  ("
              << n->death_reason() << ")\n";
  }
  std::cout << "\nResources\n---------------------------------------------------------------\nUsage:\n";
  for (const auto& [k, v] : total) {
    std::cout << " " << Amount(k, used[k]) << "/" << Amount(k, v) << " " << k << "\n";
  }
  std::cout << "\nDemands:\n";
  if (demand.empty()) std::cout << " (no resource demands)\n";
  for (const auto& [shape, count] : demand) {
    std::cout << " {";
    bool first = true;
    for (const auto& [k, v] : shape) {
      std::cout << (first ? "" : ", ") << k << ": " << v;
      first = false;
    }
    std::cout << "}: " << count << "+ pending tasks\n";
  }
  PrintAutoscaler(gcs);
  return 0;
}

}  // namespace orb::cli

#include <cstdio>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "common/id.h"
#include "common/rpc.h"
#include "common/session.h"
#include "gcs_service.grpc.pb.h"

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
  return 0;
}

}  // namespace orb::cli

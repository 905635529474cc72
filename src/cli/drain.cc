// `orb drain-node NODE_ID`: asks a node to stop taking work and hand the objects it
// holds for their owners to other nodes, so that it can be stopped without losing any
// (Ray's `ray drain-node`). The autoscaler does the same before it removes a node.
#include <iostream>

#include "cli/commands.h"
#include "common/client_pool.h"
#include "common/id.h"
#include "common/rpc.h"
#include "common/session.h"
#include "gcs_service.grpc.pb.h"
#include "raylet_service.grpc.pb.h"

namespace orb::cli {

int DrainNode(const std::string& node_prefix, const std::string& reason, const std::string& given_address) {
  std::string address = ResolveClusterAddress(given_address, "drain-node");
  if (address.empty()) return 1;
  std::string token = FindTokenForAddress(address);
  RpcClient<rpc::GcsService> gcs(address, token);
  CallOptions call;
  call.timeout = std::chrono::milliseconds(5000);
  auto nodes = gcs.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest(), call);
  if (!nodes.ok()) {
    std::cerr << "orb drain-node: cannot reach the GCS at " << address << ": " << nodes.status().message() << "\n";
    return 1;
  }
  const rpc::NodeInfo* node = nullptr;
  int matches = 0;
  for (const auto& n : nodes->nodes()) {
    if (n.state() != rpc::NodeInfo::ALIVE || node_prefix.empty()) continue;
    if (NodeID::FromBinary(n.node_id()).Hex().rfind(node_prefix, 0) == 0) {
      node = &n;
      matches++;
    }
  }
  if (matches != 1) {
    std::cerr << "orb drain-node: " << (matches == 0 ? "no live node" : "more than one live node") << " has an ID starting with '"
              << node_prefix << "' (see `orb list nodes`)\n";
    return 1;
  }
  std::string id = NodeID::FromBinary(node->node_id()).Hex();
  RpcClient<rpc::RayletService> raylet(node->ip() + ":" + std::to_string(node->raylet_port()), token);
  rpc::DrainNodeRequest request;
  request.set_reason(reason);
  CallOptions drain;
  drain.timeout = std::chrono::seconds(120);
  auto reply = raylet.CallSync<rpc::DrainNodeReply>(ORB_RPC(DrainNode), request, drain);
  if (!reply.ok()) {
    std::cerr << "orb drain-node: node " << id << " did not answer: " << reply.status().message() << "\n";
    return 1;
  }
  if (!reply->accepted()) {
    std::cerr << "orb drain-node: node " << id << " cannot leave: " << reply->rejection() << "\n";
    return 1;
  }
  std::cout << "node " << id << " is drained: " << reply->objects_moved() << " object(s), " << reply->bytes_moved()
            << " bytes moved to other nodes; it takes no new work and can be stopped\n";
  return 0;
}

}  // namespace orb::cli

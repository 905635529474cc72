// ClusterStateSource over the GCS (nodes, placement groups, the key-value store) and
// the raylets' DrainNode.
#include <nlohmann/json.hpp>

#include "autoscaler/cluster_state.h"
#include "common/id.h"
#include "common/rpc.h"
#include "gcs_service.grpc.pb.h"
#include "k8s_provider/node_provider.h"
#include "raylet_service.grpc.pb.h"

#include <spdlog/spdlog.h>

namespace orb::autoscaler {
namespace {

// A drain moves the node's objects to other nodes before it answers.
constexpr std::chrono::seconds kDrainTimeout{120};

ResourceSet WithoutGroupResources(const google::protobuf::Map<std::string, double>& amounts) {
  std::map<std::string, double> out;
  for (const auto& [name, amount] : amounts) {
    if (!IsPlacementGroupResource(name)) out[name] = amount;
  }
  return ResourceSet::FromMap(out);
}

BundleStrategy StrategyOf(rpc::PlacementGroupInfo::Strategy s) {
  switch (s) {
    case rpc::PlacementGroupInfo::SPREAD: return BundleStrategy::kSpread;
    case rpc::PlacementGroupInfo::STRICT_PACK: return BundleStrategy::kStrictPack;
    case rpc::PlacementGroupInfo::STRICT_SPREAD: return BundleStrategy::kStrictSpread;
    default: return BundleStrategy::kPack;
  }
}

class GcsClusterState : public ClusterStateSource {
 public:
  GcsClusterState(const std::string& gcs_address, std::string token) : token_(token), gcs_(gcs_address, token) {}

  absl::StatusOr<ClusterState> Read() override {
    ClusterState state;
    auto nodes = gcs_.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest(), Call());
    if (!nodes.ok()) return nodes.status();
    for (const auto& n : nodes->nodes()) {
      if (n.state() != rpc::NodeInfo::ALIVE) continue;
      ClusterNodeState node;
      node.node_id = NodeID::FromBinary(n.node_id()).Hex();
      node.raylet_address = n.ip() + ":" + std::to_string(n.raylet_port());
      auto label = n.labels().find(kLabelProviderNodeId);
      if (label != n.labels().end()) node.provider_node_id = label->second;
      node.total = WithoutGroupResources(n.resources_total());
      node.available = WithoutGroupResources(n.resources_available());
      node.labels.insert(n.labels().begin(), n.labels().end());
      for (const auto& d : n.pending_demand()) {
        bool for_group = false;
        for (const auto& [name, amount] : d.shape()) for_group |= IsPlacementGroupResource(name);
        if (for_group) continue;  // waits for its group's bundles, not for a node
        auto selector = LabelSelector::Parse(d.label_selector());
        node.queued.push_back({ResourceSet::FromAnyMap(d.shape()), d.count(), selector.ok() ? *selector : LabelSelector()});
      }
      node.object_store_used_bytes = n.object_store_used_bytes();
      state.nodes.push_back(std::move(node));
    }
    auto groups = gcs_.CallSync<rpc::ListPlacementGroupsReply>(ORB_RPC(ListPlacementGroups),
                                                               rpc::ListPlacementGroupsRequest(), Call());
    if (!groups.ok()) return groups.status();
    for (const auto& g : groups->placement_groups()) {
      if (g.state() != rpc::PlacementGroupInfo::PENDING && g.state() != rpc::PlacementGroupInfo::RESCHEDULING) continue;
      PlacementGroupDemand demand;
      demand.name = g.name().empty() ? PlacementGroupID::FromBinary(g.placement_group_id()).Hex() : g.name();
      demand.strategy = StrategyOf(g.strategy());
      for (const auto& b : g.bundles()) {
        if (b.node_id().empty()) demand.bundles.push_back(ResourceSet::FromAnyMap(b.resources()));
      }
      if (!demand.bundles.empty()) state.pending_groups.push_back(std::move(demand));
    }
    rpc::KvGetRequest get;
    get.set_namespace_(kKvNamespace);
    get.set_key(kResourceRequestsKey);
    auto requested = gcs_.CallSync<rpc::KvGetReply>(ORB_RPC(KvGet), get, Call());
    if (!requested.ok()) return requested.status();
    if (requested->found()) {
      auto json = nlohmann::json::parse(requested->value(), nullptr, /*allow_exceptions=*/false);
      if (json.is_array()) {
        for (const auto& bundle : json) {
          if (!bundle.is_object()) continue;
          std::map<std::string, double> amounts;
          for (const auto& [name, amount] : bundle.items()) {
            if (amount.is_number()) amounts[name] = amount.get<double>();
          }
          if (ResourceSet::Validate(amounts).ok()) state.requested.push_back(ResourceSet::FromMap(amounts));
        }
      }
    }
    return state;
  }

  absl::Status Drain(const ClusterNodeState& node, const std::string& reason,
                     const std::vector<std::string>& avoid) override {
    RpcClient<rpc::RayletService> raylet(node.raylet_address, token_);
    rpc::DrainNodeRequest request;
    request.set_reason(reason);
    for (const auto& id : avoid) request.add_avoid_node_ids(id);
    CallOptions options;
    options.timeout = kDrainTimeout;
    auto reply = raylet.CallSync<rpc::DrainNodeReply>(ORB_RPC(DrainNode), request, options);
    if (absl::IsDeadlineExceeded(reply.status())) {
      // Still moving objects: terminating it now could lose them.
      return absl::FailedPreconditionError("the node did not finish moving its objects within " +
                                           std::to_string(kDrainTimeout.count()) + " s");
    }
    if (!reply.ok()) return reply.status();
    if (!reply->accepted()) return absl::FailedPreconditionError("the node cannot leave: " + reply->rejection());
    if (reply->objects_moved() > 0) {
      spdlog::info("{} moved {} object(s) ({} bytes) to other nodes before leaving", node.provider_node_id,
                   reply->objects_moved(), reply->bytes_moved());
    }
    return absl::OkStatus();
  }

  absl::Status PublishStatus(const std::string& json) override {
    rpc::KvPutRequest put;
    put.set_namespace_(kKvNamespace);
    put.set_key(kStatusKey);
    put.set_value(json);
    put.set_overwrite(true);
    auto reply = gcs_.CallSync<rpc::KvPutReply>(ORB_RPC(KvPut), put, Call());
    return reply.status();
  }

 private:
  static CallOptions Call() { return CallOptions::Retried(); }

  std::string token_;
  RpcClient<rpc::GcsService> gcs_;
};

}  // namespace

std::unique_ptr<ClusterStateSource> NewGcsClusterState(const std::string& gcs_address, const std::string& token) {
  return std::make_unique<GcsClusterState>(gcs_address, token);
}

}  // namespace orb::autoscaler

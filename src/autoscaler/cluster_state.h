// What the autoscaler reads from the cluster and the few things it asks of it, behind
// an interface: the GCS in production (GcsClusterState), a fake in unit tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "autoscaler/scaling_planner.h"
#include "common/node_types.h"
#include "common/resources.h"

namespace orb::autoscaler {

// GCS key-value keys the autoscaler reads and writes (common/node_types.h).
inline constexpr const char* kKvNamespace = kNodeTypesKvNamespace;
inline constexpr const char* kResourceRequestsKey = kResourceRequestsKvKey;
inline constexpr const char* kStatusKey = kAutoscalerStatusKvKey;

struct ClusterNodeState {
  std::string node_id;  // hex
  std::string raylet_address;
  std::string provider_node_id;  // its orb.io/provider-node-id label; empty when none
  ResourceSet total;             // without placement-group resources
  ResourceSet available;
  std::map<std::string, std::string> labels;
  std::vector<ShapeDemand> queued;
  int64_t object_store_used_bytes = 0;

  // Nothing runs or waits here. Objects do not keep a node: draining moves them.
  bool Idle() const { return queued.empty() && available == total; }
};

struct ClusterState {
  std::vector<ClusterNodeState> nodes;  // alive nodes
  std::vector<PlacementGroupDemand> pending_groups;
  std::vector<ResourceSet> requested;
};

class ClusterStateSource {
 public:
  virtual ~ClusterStateSource() = default;
  virtual absl::StatusOr<ClusterState> Read() = 0;
  // Asks the node's raylet to stop taking work and to hand its objects to other nodes
  // before it is terminated: FailedPrecondition (with why) when the node is not idle
  // after all, or could not move every object. `avoid`: nodes (hex IDs) that may leave
  // too, so objects go elsewhere when they can.
  virtual absl::Status Drain(const ClusterNodeState& node, const std::string& reason,
                             const std::vector<std::string>& avoid) = 0;
  virtual absl::Status PublishStatus(const std::string& json) = 0;
};

// The GCS at `gcs_address`, and raylets for draining.
std::unique_ptr<ClusterStateSource> NewGcsClusterState(const std::string& gcs_address, const std::string& token);

}  // namespace orb::autoscaler

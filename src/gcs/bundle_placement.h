// Where a placement group's bundles go: a pure function of the strategy, the bundles
// still to place, the nodes the group already uses, and each live node's available
// resources (as gossiped; the raylets' two-phase reservation has the final word).
//
//   STRICT_PACK    every bundle on one node, or nothing.
//   PACK           one node if they fit; else as few nodes as fit, reusing the
//                  group's nodes first.
//   STRICT_SPREAD  every bundle on a different node, or nothing.
//   SPREAD         different nodes while any fit; then nodes reused.
// Among equal choices, the node with the most of the bundle's resources available wins.
// A bundle that asks for no GPU keeps off nodes with GPUs while another node can take it
// (reusing one, for SPREAD), as Ray's scheduler_avoid_gpu_nodes: CPU work must not take
// the CPUs that GPU work on those nodes will need.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/resources.h"
#include "gcs_service.pb.h"

namespace orb::gcs {

struct NodeCapacity {
  std::string node_id;  // binary
  ResourceSet available;
  bool has_gpus = false;  // its total has GPUs
};

struct BundleToPlace {
  int index;
  ResourceSet resources;
};

// Node (binary ID) per bundle index, or nullopt when the strategy cannot be met now.
// `used_nodes`: nodes holding the group's bundles already placed (when rescheduling).
std::optional<std::map<int, std::string>> PlaceBundles(rpc::PlacementGroupInfo::Strategy strategy,
                                                       const std::vector<BundleToPlace>& bundles,
                                                       const std::vector<std::string>& used_nodes,
                                                       std::vector<NodeCapacity> nodes);

}  // namespace orb::gcs

// The autoscaler's decision, as a pure function of a snapshot: which nodes to add and
// which to take away. No clock, no I/O: the same input always gives the same plan, so
// it is tested directly and benchmarked at 10,000 shapes over 1,000 nodes.
//
// The algorithm (docs/autoscaler.md tells it at more length):
// 1. Bins. Every node is a bin holding what it has free now; a node being launched (not
//    yet joined) is a bin holding its type's full resources.
// 2. Floors. Each node type gets at least its min_workers nodes.
// 3. Requested resources (RequestResources): bundles that the cluster must be able to
//    hold at once, packed first-fit against the nodes' *total* resources; nodes they
//    land on are kept even when idle, and bundles that fit nowhere add nodes.
// 4. Pending placement groups: STRICT_PACK as one shape; STRICT_SPREAD with each bundle
//    on a different node; PACK and SPREAD bundle by bundle.
// 5. Queued work (lease requests waiting on raylets), largest shapes first, first-fit
//    into the bins whose labels its label selector accepts; what does not fit adds nodes
//    of a type whose labels it accepts.
//    Adding a node: among the node types that can hold the shape and are below their
//    max_workers (and the cluster below max_workers), the one that would be best used
//    by the demand still waiting: a type with GPUs is never chosen for work that needs
//    none while another fits; then the highest average utilisation of the type's
//    resources once that demand is packed onto one node of it; then the name. The new
//    node is a bin, so later shapes use what it has left.
//    A shape no type can hold is reported infeasible, once, with the reason.
// 6. Warm pools: a type with warm_pool N gets new nodes until N of its nodes (joined
//    or launching) have no work packed onto them and nothing running.
// 7. Upscaling speed: at most max(5, upscaling_speed × nodes) launches may be pending
//    at once; the rest wait for the next round.
// 8. Scale in: a node the autoscaler launched, idle (all resources free, no queued work,
//    no objects in its store) for idle_timeout, not holding requested resources and
//    not needed to keep its type at min_workers or its warm pool full, is terminated
//    (drained first).
// Every launch and termination comes with its reason, in words for the log and
// `orb status`.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/label_selector.h"
#include "common/resources.h"

namespace orb::autoscaler {

struct NodeTypeLimits {
  std::string name;
  ResourceSet resources;
  int min_workers = 0;
  int max_workers = 0;
  std::string min_reason;  // why min_workers is what it is, when not the config's (a metric rule)
  std::map<std::string, std::string> labels;  // its nodes' labels (orb.io/node-type included)
  // Idle nodes kept ready (within max_workers): not removed by the idle timeout, and a
  // new one launched when one takes work, so that work that comes finds a node up.
  int warm_pool = 0;
};

struct PlannerNode {
  std::string key;        // the provider's node ID; for a node not launched by the autoscaler, its orb node ID
  std::string node_type;  // empty for a node not launched by the autoscaler (never terminated)
  bool launching = false;  // launched, its raylet not yet in the cluster
  ResourceSet total;
  ResourceSet available;
  std::chrono::milliseconds idle_for{0};  // how long it has been idle; 0 when busy
  std::string scale_in_reason;  // set when a rule makes it go before idle_timeout
  std::map<std::string, std::string> labels;
};

struct ShapeDemand {
  ResourceSet shape;
  int64_t count = 1;
  LabelSelector selector;  // nodes it may run on; empty: any
};

enum class BundleStrategy { kPack, kSpread, kStrictPack, kStrictSpread };

struct PlacementGroupDemand {
  std::string name;  // for reasons: the group's name or ID
  BundleStrategy strategy = BundleStrategy::kPack;
  std::vector<ResourceSet> bundles;
};

struct ScalingInput {
  std::vector<NodeTypeLimits> types;
  std::vector<PlannerNode> nodes;
  std::vector<ShapeDemand> queued;  // lease requests waiting on raylets
  std::vector<PlacementGroupDemand> placement_groups;
  std::vector<ResourceSet> requested;  // RequestResources bundles
  int max_workers = 1000;              // for the whole cluster (launched nodes)
  double upscaling_speed = 1.0;
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(5)};
};

struct ScalingPlan {
  std::map<std::string, int> launch;    // node type → how many to add now
  std::map<std::string, std::string> launch_reasons;  // node type → why, in words
  std::vector<std::string> terminate;   // PlannerNode keys
  std::vector<std::string> reasons;     // one line per other decision (terminations, what cannot be placed)
  std::vector<std::string> infeasible;  // shapes no node type can hold
};

ScalingPlan PlanScaling(const ScalingInput& input);

// Resource names of placement-group bundles ("CPU_group_0_<id>"): demand for them waits
// for its group, not for a node.
bool IsPlacementGroupResource(const std::string& name);

}  // namespace orb::autoscaler

// The kinds of node an autoscaler may add (Ray's `available_node_types`): kept in the
// GCS key-value store by whoever configures autoscaling (`orb start --head
// --autoscaling-config FILE`, or the autoscaler itself), and read by raylets to tell
// work that must wait for a new node from work that no node could ever run.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/resources.h"

namespace orb {

inline constexpr char kNodeTypesKvNamespace[] = "orb";
inline constexpr char kNodeTypesKvKey[] = "autoscaler/available_node_types";
// RequestResources (orb::RequestResources): a JSON array of bundles ({"CPU": 1, ...})
// the cluster must be able to hold at once; the autoscaler reads it.
inline constexpr char kResourceRequestsKvKey[] = "autoscaler/resource_requests";
// What the autoscaler last saw and decided, as JSON, for `orb status`.
inline constexpr char kAutoscalerStatusKvKey[] = "autoscaler/status";

struct NodeType {
  std::string name;
  ResourceSet resources;
  std::map<std::string, std::string> labels;
  int min_workers = 0;
  int max_workers = 0;  // 0: never launched, so it makes nothing feasible
};

// Parses {"<name>": {"resources": {...}, "labels": {...}, "min_workers": N,
// "max_workers": N, ...}, ...} (other fields, such as a pod template, are the node
// provider's). InvalidArgument naming the node type and field.
absl::StatusOr<std::vector<NodeType>> ParseNodeTypes(const std::string& json);

// The node type that could run a request for `resources` on nodes matching
// `selector_matches`, or null.
const NodeType* FindLaunchableType(const std::vector<NodeType>& types, const ResourceSet& resources,
                                   const std::function<bool(const std::map<std::string, std::string>&)>& labels_match);

}  // namespace orb

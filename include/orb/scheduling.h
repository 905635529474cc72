// Scheduling options for tasks: where a task may run and which nodes it prefers.
//
//   orb::Task(f).SetSchedulingStrategy(orb::SpreadSchedulingStrategy{}).Remote();
//   orb::Task(f).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{node_id, /*soft=*/true}).Remote();
//   orb::Task(f).SetLabelSelector("zone in (a,b), !spot").Remote();
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <variant>

namespace orb {

// Resource name -> amount ("CPU", "GPU", "memory" or a custom name). Built from braces
// ({{"CPU", 1}, {"GPU", 0.5}}), a std::map, or a std::unordered_map (what Ray's
// SetResources takes).
class ResourceMap : public std::map<std::string, double> {
 public:
  using map::map;
  ResourceMap() = default;
  ResourceMap(const std::map<std::string, double>& resources) : map(resources) {}
  ResourceMap(const std::unordered_map<std::string, double>& resources) : map(resources.begin(), resources.end()) {}
};

// Hybrid (the default): pack onto the local node until it is about half used, then
// prefer the least-loaded nodes.
struct DefaultSchedulingStrategy {};
// Spread tasks over nodes.
struct SpreadSchedulingStrategy {};
// Run on one node (hex ID from orb::Nodes() or GetRuntimeContext().GetNodeId()).
// Hard (soft=false): only there; a node that does not exist is InfeasibleError.
// Soft: there when it can, elsewhere otherwise.
struct NodeAffinitySchedulingStrategy {
  std::string node_id;
  bool soft = false;
};

using SchedulingStrategy =
    std::variant<DefaultSchedulingStrategy, SpreadSchedulingStrategy, NodeAffinitySchedulingStrategy>;

}  // namespace orb

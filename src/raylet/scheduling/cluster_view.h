// What the scheduler knows about the cluster: every node's total and available
// resources, labels and liveness, and which node is local. A read-only snapshot for
// policies; the raylet refreshes it from the cluster state it receives.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/id.h"
#include "common/resources.h"

namespace orb {

struct NodeView {
  NodeID id;
  std::string address;                 // raylet "ip:port"
  std::string object_manager_address;  // its object stream "ip:port"
  ResourceSet total;
  ResourceSet available;
  std::map<std::string, std::string> labels;
  bool alive = true;

  // The largest fraction in use, over the resources that `extra` asks for (CPU when it
  // asks for none), after also taking `extra`: 0 for an idle node, 1 for a full one.
  double UtilizationWith(const ResourceSet& extra) const;
};

class ClusterView {
 public:
  ClusterView() = default;
  ClusterView(NodeID local, std::vector<NodeView> nodes);

  const NodeID& local() const { return local_; }
  const std::vector<NodeView>& nodes() const { return nodes_; }
  // nullptr when the node is unknown.
  const NodeView* Find(const NodeID& id) const;

  // Replaces or adds one node's entry.
  void Upsert(NodeView node);
  // Records that `resources` were just sent to `id`, so that the next decisions before
  // the node's own report see them as taken.
  void Reserve(const NodeID& id, const ResourceSet& resources);

 private:
  NodeID local_;
  std::vector<NodeView> nodes_;
  std::unordered_map<NodeID, size_t> index_;
};

}  // namespace orb

// What the scheduler knows about the cluster: every node's total and available
// resources, labels and liveness, and which node is local. A read-only snapshot for
// policies; the raylet refreshes it from the cluster state it receives.
//
// Indexes that keep a decision from touching every node: nodes are grouped by their
// total resources (a cluster has few distinct node shapes), so whether a request can
// ever run is one check per shape; and `labels_epoch` changes whenever the set of nodes
// or any node's labels change, so a scheduler can keep the nodes matching a label
// selector until then.
#pragma once

#include <cstdint>
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
  bool draining = false;  // leaving: no new work goes there (its objects are still read)

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
  // Gives back what Reserve took.
  void Unreserve(const NodeID& id, const ResourceSet& resources);

  // The distinct totals of the nodes, and which of them node `index` has.
  const std::vector<ResourceSet>& shapes() const { return shapes_; }
  uint32_t shape_of(size_t index) const { return shape_of_[index]; }
  // Unique across all views of the process; changes when a node joins or its labels change.
  uint64_t labels_epoch() const { return labels_epoch_; }

 private:
  uint32_t ShapeIndex(const ResourceSet& total);
  void CompactShapes();

  NodeID local_;
  std::vector<NodeView> nodes_;
  std::unordered_map<NodeID, size_t> index_;
  std::vector<ResourceSet> shapes_;
  std::vector<uint32_t> shape_of_;
  uint64_t labels_epoch_ = 0;
};

}  // namespace orb

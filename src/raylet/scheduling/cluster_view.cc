#include "raylet/scheduling/cluster_view.h"

#include <algorithm>

namespace orb {

double NodeView::UtilizationWith(const ResourceSet& extra) const {
  // Only the requested resources decide: a node's unrelated resources do not make it a
  // worse place for this request. Integer IDs and no allocation: this runs per node per
  // decision.
  static const int kCpu = ResourceSet::IdOf("CPU");
  double worst = 0;
  auto consider = [&](int id, double asked) {
    double amount = total.GetById(id);
    if (amount <= 0) return;
    worst = std::max(worst, (amount - available.GetById(id) + asked) / amount);
  };
  if (extra.IsEmpty()) {
    consider(kCpu, 0);
  } else {
    extra.ForEachId(consider);
  }
  return worst;
}

ClusterView::ClusterView(NodeID local, std::vector<NodeView> nodes) : local_(local) {
  for (auto& n : nodes) Upsert(std::move(n));
}

const NodeView* ClusterView::Find(const NodeID& id) const {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &nodes_[it->second];
}

void ClusterView::Reserve(const NodeID& id, const ResourceSet& resources) {
  auto it = index_.find(id);
  if (it != index_.end()) nodes_[it->second].available.Subtract(resources);
}

void ClusterView::Upsert(NodeView node) {
  auto it = index_.find(node.id);
  if (it != index_.end()) {
    nodes_[it->second] = std::move(node);
    return;
  }
  index_[node.id] = nodes_.size();
  nodes_.push_back(std::move(node));
}

}  // namespace orb

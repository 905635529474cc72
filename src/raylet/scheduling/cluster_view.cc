#include "raylet/scheduling/cluster_view.h"

#include <algorithm>

namespace orb {

double NodeView::UtilizationWith(const ResourceSet& extra) const {
  // Only the requested resources decide: a node's unrelated resources do not make it a
  // worse place for this request. No allocation: this runs per node per decision.
  double worst = 0;
  auto consider = [&](const std::string& name, double asked) {
    double amount = total.Get(name);
    if (amount <= 0) return;
    worst = std::max(worst, (amount - available.Get(name) + asked) / amount);
  };
  if (extra.IsEmpty()) {
    consider("CPU", 0);
  } else {
    extra.ForEach(consider);
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

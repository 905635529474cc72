#include "raylet/scheduling/cluster_view.h"

#include <algorithm>
#include <atomic>

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

namespace {

uint64_t NextLabelsEpoch() {
  static std::atomic<uint64_t> epoch{1};
  return epoch.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

ClusterView::ClusterView(NodeID local, std::vector<NodeView> nodes) : local_(local) {
  nodes_.reserve(nodes.size() + 1);
  for (auto& n : nodes) Upsert(std::move(n));
  if (labels_epoch_ == 0) labels_epoch_ = NextLabelsEpoch();
}

const NodeView* ClusterView::Find(const NodeID& id) const {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &nodes_[it->second];
}

void ClusterView::Reserve(const NodeID& id, const ResourceSet& resources) {
  auto it = index_.find(id);
  if (it != index_.end()) nodes_[it->second].available.Subtract(resources);
}

void ClusterView::Unreserve(const NodeID& id, const ResourceSet& resources) {
  auto it = index_.find(id);
  if (it != index_.end()) nodes_[it->second].available.Add(resources);
}

uint32_t ClusterView::ShapeIndex(const ResourceSet& total) {
  for (size_t i = 0; i < shapes_.size(); ++i) {
    if (shapes_[i] == total) return static_cast<uint32_t>(i);
  }
  shapes_.push_back(total);
  return static_cast<uint32_t>(shapes_.size() - 1);
}

void ClusterView::CompactShapes() {
  shapes_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) shape_of_[i] = ShapeIndex(nodes_[i].total);
}

void ClusterView::Upsert(NodeView node) {
  auto it = index_.find(node.id);
  if (it != index_.end()) {
    size_t i = it->second;
    if (!(nodes_[i].total == node.total)) {
      shape_of_[i] = ShapeIndex(node.total);
      // A node whose capacity keeps changing (placement group bundles) leaves shapes
      // nobody has: drop them before they make decisions slower.
      if (shapes_.size() > 2 * nodes_.size() + 16) {
        nodes_[i].total = node.total;
        CompactShapes();
      }
    }
    if (nodes_[i].labels != node.labels) labels_epoch_ = NextLabelsEpoch();
    nodes_[i] = std::move(node);
    return;
  }
  index_[node.id] = nodes_.size();
  shape_of_.push_back(ShapeIndex(node.total));
  nodes_.push_back(std::move(node));
  labels_epoch_ = NextLabelsEpoch();
}

}  // namespace orb

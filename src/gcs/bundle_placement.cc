#include "gcs/bundle_placement.h"

#include <algorithm>
#include <set>

namespace orb::gcs {
namespace {

// How much room `node` leaves for `bundle`: the smallest ratio available/needed over
// the bundle's resources (higher is roomier).
double Room(const NodeCapacity& node, const ResourceSet& bundle) {
  double room = 1e18;
  for (const auto& [name, amount] : bundle.ToMap()) room = std::min(room, node.available.Get(name) / amount);
  return room;
}

// The roomiest node among `candidates` that fits `bundle`, or nullptr.
NodeCapacity* Best(std::vector<NodeCapacity*> candidates, const ResourceSet& bundle) {
  NodeCapacity* best = nullptr;
  for (NodeCapacity* node : candidates) {
    if (!node->available.Contains(bundle)) continue;
    if (!best || Room(*node, bundle) > Room(*best, bundle)) best = node;
  }
  return best;
}

// Best, but a bundle without GPUs looks at nodes without GPUs only.
NodeCapacity* BestWithoutGpus(const std::vector<NodeCapacity*>& candidates, const ResourceSet& bundle) {
  std::vector<NodeCapacity*> plain;
  for (NodeCapacity* n : candidates) {
    if (!n->has_gpus) plain.push_back(n);
  }
  return Best(plain, bundle);
}

bool AsksForGpus(const ResourceSet& bundle) { return bundle.Get("GPU") > 0; }

}  // namespace

std::optional<std::map<int, std::string>> PlaceBundles(rpc::PlacementGroupInfo::Strategy strategy,
                                                       const std::vector<BundleToPlace>& bundles,
                                                       const std::vector<std::string>& used_nodes,
                                                       std::vector<NodeCapacity> nodes) {
  std::map<int, std::string> placement;
  std::set<std::string> used(used_nodes.begin(), used_nodes.end());
  std::vector<NodeCapacity*> all;
  for (auto& n : nodes) all.push_back(&n);
  auto assign = [&](const BundleToPlace& bundle, NodeCapacity* node) {
    node->available.Subtract(bundle.resources);
    placement[bundle.index] = node->node_id;
    used.insert(node->node_id);
  };

  bool pack = strategy == rpc::PlacementGroupInfo::PACK || strategy == rpc::PlacementGroupInfo::STRICT_PACK;
  if (pack) {
    // One node for all: the group's node if it has one (strict), else the roomiest fit.
    ResourceSet sum;
    for (const auto& b : bundles) sum.Add(b.resources);
    std::vector<NodeCapacity*> candidates;
    for (NodeCapacity* n : all) {
      if (strategy == rpc::PlacementGroupInfo::STRICT_PACK && !used.empty() && !used.count(n->node_id)) continue;
      candidates.push_back(n);
    }
    NodeCapacity* node = AsksForGpus(sum) ? nullptr : BestWithoutGpus(candidates, sum);
    if (!node) node = Best(candidates, sum);
    if (node) {
      for (const auto& b : bundles) assign(b, node);
      return placement;
    }
    if (strategy == rpc::PlacementGroupInfo::STRICT_PACK) return std::nullopt;
    for (const auto& b : bundles) {  // PACK that does not fit one node: reuse first
      std::vector<NodeCapacity*> reuse;
      for (NodeCapacity* n : all) {
        if (used.count(n->node_id)) reuse.push_back(n);
      }
      bool plain_first = !AsksForGpus(b.resources);
      NodeCapacity* node = plain_first ? BestWithoutGpus(reuse, b.resources) : nullptr;
      if (!node && plain_first) node = BestWithoutGpus(all, b.resources);
      if (!node) node = Best(reuse, b.resources);
      if (!node) node = Best(all, b.resources);
      if (!node) return std::nullopt;
      assign(b, node);
    }
    return placement;
  }

  for (const auto& b : bundles) {
    std::vector<NodeCapacity*> fresh;
    for (NodeCapacity* n : all) {
      if (!used.count(n->node_id)) fresh.push_back(n);
    }
    bool spread = strategy == rpc::PlacementGroupInfo::SPREAD;
    NodeCapacity* node = nullptr;
    if (!AsksForGpus(b.resources)) {
      node = BestWithoutGpus(fresh, b.resources);
      if (!node && spread) node = BestWithoutGpus(all, b.resources);
    }
    if (!node) node = Best(fresh, b.resources);
    if (!node && spread) node = Best(all, b.resources);
    if (!node) return std::nullopt;
    assign(b, node);
  }
  return placement;
}

}  // namespace orb::gcs

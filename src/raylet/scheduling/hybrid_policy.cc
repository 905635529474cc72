#include "raylet/scheduling/hybrid_policy.h"

#include <algorithm>

namespace orb {

const NodeView* HybridPolicy::Select(const SchedulingRequest& request, const ClusterView& view,
                                     const std::vector<const NodeView*>& candidates) {
  if (candidates.empty()) return nullptr;
  uint64_t max_bytes = 0;
  for (const auto& [node, bytes] : request.argument_bytes) max_bytes = std::max(max_bytes, bytes);
  // Locality first: a node with most of the arguments, if it has room below the threshold.
  if (max_bytes > 0) {
    for (const NodeView* n : candidates) {
      auto it = request.argument_bytes.find(n->id);
      if (it != request.argument_bytes.end() && it->second == max_bytes &&
          n->UtilizationWith(request.resources) <= options_.spread_threshold) {
        return n;
      }
    }
  }
  for (const NodeView* n : candidates) {
    if (n->id == view.local() && n->UtilizationWith(request.resources) <= options_.spread_threshold &&
        (request.soft_labels.empty() || request.soft_labels.Matches(n->labels))) {
      return n;
    }
  }
  struct Scored {
    const NodeView* node;
    double score;
  };
  std::vector<Scored> scored;
  scored.reserve(candidates.size());
  for (const NodeView* n : candidates) {
    double u = n->UtilizationWith(request.resources);
    double score = u <= options_.spread_threshold ? 0.0 : u;
    if (!request.soft_labels.empty() && !request.soft_labels.Matches(n->labels)) score += 2.0;
    auto bytes = request.argument_bytes.find(n->id);
    if (max_bytes > 0 && (bytes == request.argument_bytes.end() || bytes->second < max_bytes)) score += 0.01;
    scored.push_back({n, score});
  }
  size_t k = std::min(std::max<size_t>(1, options_.top_k), scored.size());
  std::partial_sort(scored.begin(), scored.begin() + static_cast<long>(k), scored.end(),
                    [](const Scored& a, const Scored& b) { return a.score < b.score; });
  // Choose at random among the best-scoring nodes of the top k (nodes under the
  // threshold all score 0, so idle nodes share the load).
  size_t pool = 1;
  while (pool < k && scored[pool].score <= scored[0].score) ++pool;
  std::uniform_int_distribution<size_t> pick(0, pool - 1);
  return scored[pick(random_)].node;
}

}  // namespace orb

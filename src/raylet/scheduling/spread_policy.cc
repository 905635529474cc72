#include "raylet/scheduling/spread_policy.h"

namespace orb {

const NodeView* SpreadPolicy::Select(const SchedulingRequest& request, const ClusterView&,
                                     const std::vector<const NodeView*>& candidates) {
  if (candidates.empty()) return nullptr;
  double best = 2.0;
  for (const NodeView* n : candidates) best = std::min(best, n->UtilizationWith(request.resources));
  size_t count = candidates.size();
  for (size_t i = 0; i < count; ++i) {
    const NodeView* n = candidates[(next_ + i) % count];
    if (n->UtilizationWith(request.resources) <= best + 1e-9) {
      next_ = (next_ + i + 1) % count;
      return n;
    }
  }
  return candidates.front();
}

}  // namespace orb

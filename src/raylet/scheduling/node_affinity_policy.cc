#include "raylet/scheduling/node_affinity_policy.h"

namespace orb {

const NodeView* NodeAffinityPolicy::Select(const SchedulingRequest& request, const ClusterView& view,
                                           const std::vector<const NodeView*>& candidates) {
  for (const NodeView* n : candidates) {
    if (n->id == request.affinity_node) return n;
  }
  return request.affinity_soft ? fallback_->Select(request, view, candidates) : nullptr;
}

}  // namespace orb

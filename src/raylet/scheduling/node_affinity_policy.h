// Node affinity: run on one given node. Hard affinity accepts only that node (none when
// it is not a candidate); soft affinity falls back to another policy (hybrid).
#pragma once

#include "raylet/scheduling/scheduling_policy.h"

namespace orb {

class NodeAffinityPolicy : public SchedulingPolicy {
 public:
  explicit NodeAffinityPolicy(SchedulingPolicy* fallback) : fallback_(fallback) {}
  const NodeView* Select(const SchedulingRequest& request, const ClusterView& view,
                         const std::vector<const NodeView*>& candidates) override;

 private:
  SchedulingPolicy* fallback_;
};

}  // namespace orb

// Spread scheduling: place each request on the candidate with the lowest utilization
// (after placing it), breaking ties round-robin, so that successive tasks land on
// different nodes even when all are idle.
#pragma once

#include "raylet/scheduling/scheduling_policy.h"

namespace orb {

class SpreadPolicy : public SchedulingPolicy {
 public:
  const NodeView* Select(const SchedulingRequest& request, const ClusterView& view,
                         const std::vector<const NodeView*>& candidates) override;

 private:
  size_t next_ = 0;  // round-robin cursor among equally loaded nodes
};

}  // namespace orb

// Hybrid scheduling (the default), as in Ray:
//
// Pack work onto the local node while its most-used resource stays at or below
// `spread_threshold` (default 0.5) after placing the request; past that, spread: score
// every candidate by that same utilization, treat scores under the threshold as equal
// (packing does not matter there), and pick at random among the best-scoring nodes of
// the `top_k` best, so that many raylets deciding at once do not all pick one node. Among equals, a node
// holding more of the task's argument bytes wins (locality), then a node matching the
// soft label selector.
#pragma once

#include <functional>
#include <random>

#include "raylet/scheduling/scheduling_policy.h"

namespace orb {

struct HybridPolicyOptions {
  double spread_threshold = 0.5;
  // How many of the best nodes to choose among at random; at least 1.
  size_t top_k = 3;
};

class HybridPolicy : public SchedulingPolicy {
 public:
  explicit HybridPolicy(HybridPolicyOptions options = {}, uint64_t seed = 42) : options_(options), random_(seed) {}
  const NodeView* Select(const SchedulingRequest& request, const ClusterView& view,
                         const std::vector<const NodeView*>& candidates) override;

 private:
  HybridPolicyOptions options_;
  std::mt19937_64 random_;
};

}  // namespace orb

// Filter → rank → bind.
//
// Filter: drop nodes that are dead, lack the resources in total, or fail the hard
// label selector; if nothing is left the request is *infeasible* (it can never run
// until the cluster changes). Of the rest, keep the nodes with the resources available
// now; if none, the request *waits*. Rank: the policy for the request's strategy picks
// one (hybrid, spread, node affinity). Bind is the caller's: the raylet reserves the
// resources on the chosen node, locally or by sending the request there (spillback);
// a node whose view was stale refuses, and the request is scheduled again.
//
// Not thread-safe (policies keep random and round-robin state); one per raylet loop.
#pragma once

#include <memory>
#include <string>

#include "raylet/scheduling/hybrid_policy.h"
#include "raylet/scheduling/node_affinity_policy.h"
#include "raylet/scheduling/spread_policy.h"

namespace orb {

struct SchedulingDecision {
  enum class Kind { kNode, kWait, kInfeasible };
  Kind kind = Kind::kWait;
  // kNode: where to run. kWait: a feasible node to queue at (the local one if it is
  // feasible, else the least used).
  const NodeView* node = nullptr;
  std::string reason;              // for kInfeasible
};

class Scheduler {
 public:
  explicit Scheduler(HybridPolicyOptions hybrid = {}, uint64_t seed = 42);
  SchedulingDecision Schedule(const SchedulingRequest& request, const ClusterView& view);

 private:
  HybridPolicy hybrid_;
  SpreadPolicy spread_;
  NodeAffinityPolicy affinity_;
  std::vector<const NodeView*> feasible_;    // reused buffers: no allocation per decision
  std::vector<const NodeView*> available_;
};

}  // namespace orb

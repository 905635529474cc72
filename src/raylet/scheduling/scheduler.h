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
// A decision does not scan the cluster. Feasibility is checked once per node shape
// (ClusterView::shapes); the nodes matching a hard label selector are kept until the
// view's labels change; and the policy ranks a sample: the local node and the nodes
// holding the task's arguments, plus up to `kSampleSize` available nodes found by
// walking the cluster from a random point (spread: from a cursor that moves on). A
// cluster of at most kSampleSize nodes is ranked whole. So a decision costs about the
// same at 10 nodes and at 10,000 (as Ray's top-k sampling).
//
// Not thread-safe (policies keep random and round-robin state); one per raylet loop.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <unordered_map>

#include "raylet/scheduling/hybrid_policy.h"
#include "raylet/scheduling/node_affinity_policy.h"
#include "raylet/scheduling/spread_policy.h"

namespace orb {

struct SchedulingDecision {
  enum class Kind { kNode, kWait, kInfeasible };
  Kind kind = Kind::kWait;
  // kNode: where to run. kWait: a feasible node to queue at (SPREAD: the next in turn;
  // otherwise the local one if it is feasible, else the least used).
  const NodeView* node = nullptr;
  std::string reason;              // for kInfeasible
  // kInfeasible for hard affinity to a node that is not in the cluster or is dead: no
  // waiting can help (a node that merely lacks the resources may yet grow, or this
  // view of it may be stale).
  bool node_gone = false;
};

class Scheduler {
 public:
  explicit Scheduler(HybridPolicyOptions hybrid = {}, uint64_t seed = 42);
  SchedulingDecision Schedule(const SchedulingRequest& request, const ClusterView& view);

 private:
  static constexpr size_t kSampleSize = 64;

  SchedulingDecision ScheduleHardAffinity(const SchedulingRequest& request, const ClusterView& view);
  // The indexes of the nodes matching `selector`, kept until the view's labels change.
  const std::vector<uint32_t>& NodesMatching(const LabelSelector& selector, const ClusterView& view);
  // Whether node `index` could ever run the request (feasible_shape_ filled for it).
  bool Feasible(const ClusterView& view, size_t index) const;

  HybridPolicy hybrid_;
  SpreadPolicy spread_;
  NodeAffinityPolicy affinity_;
  std::mt19937_64 random_;
  size_t spread_cursor_ = 0;
  size_t spread_wait_cursor_ = 0;  // where SPREAD waits next when no node has room
  std::vector<char> feasible_shape_;         // reused buffers: no allocation per decision
  std::vector<const NodeView*> available_;
  uint64_t matches_epoch_ = 0;
  std::unordered_map<std::string, std::vector<uint32_t>> matches_;  // by selector text
};

}  // namespace orb

#include "raylet/scheduling/scheduler.h"

namespace orb {

Scheduler::Scheduler(HybridPolicyOptions hybrid, uint64_t seed) : hybrid_(hybrid, seed), affinity_(&hybrid_) {}

SchedulingDecision Scheduler::Schedule(const SchedulingRequest& request, const ClusterView& view) {
  SchedulingDecision decision;
  if (request.strategy == SchedulingStrategy::kNodeAffinity && !request.affinity_soft) {
    const NodeView* target = view.Find(request.affinity_node);
    if (!target || !target->alive) {
      decision.kind = SchedulingDecision::Kind::kInfeasible;
      decision.reason = "hard node affinity to " + request.affinity_node.Hex() +
                        (target ? ", which is dead" : ", which is not in the cluster");
      return decision;
    }
  }
  feasible_.clear();
  available_.clear();
  for (const NodeView& n : view.nodes()) {
    if (!n.alive || !n.total.Contains(request.resources)) continue;
    if (!request.hard_labels.empty() && !request.hard_labels.Matches(n.labels)) continue;
    feasible_.push_back(&n);
    if (n.available.Contains(request.resources)) available_.push_back(&n);
  }
  if (feasible_.empty()) {
    decision.kind = SchedulingDecision::Kind::kInfeasible;
    decision.reason = "no node has " + request.resources.ToString() +
                      (request.hard_labels.empty() ? "" : " with labels matching '" + request.hard_labels.text() + "'");
    return decision;
  }
  SchedulingPolicy* policy = &hybrid_;
  if (request.strategy == SchedulingStrategy::kSpread) policy = &spread_;
  if (request.strategy == SchedulingStrategy::kNodeAffinity) policy = &affinity_;
  decision.node = policy->Select(request, view, available_);
  if (decision.node) {
    decision.kind = SchedulingDecision::Kind::kNode;
    return decision;
  }
  decision.kind = SchedulingDecision::Kind::kWait;
  for (const NodeView* n : feasible_) {
    if (request.strategy == SchedulingStrategy::kNodeAffinity && !request.affinity_soft) {
      if (n->id == request.affinity_node) decision.node = n;
      continue;
    }
    if (n->id == view.local()) {
      decision.node = n;
      break;
    }
    if (!decision.node || n->UtilizationWith(request.resources) < decision.node->UtilizationWith(request.resources)) {
      decision.node = n;
    }
  }
  return decision;
}

}  // namespace orb

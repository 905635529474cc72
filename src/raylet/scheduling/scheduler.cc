#include "raylet/scheduling/scheduler.h"

#include <algorithm>

namespace orb {

Scheduler::Scheduler(HybridPolicyOptions hybrid, uint64_t seed)
    : hybrid_(hybrid, seed), affinity_(&hybrid_), random_(seed ^ 0x9e3779b97f4a7c15ULL) {}

const std::vector<uint32_t>& Scheduler::NodesMatching(const LabelSelector& selector, const ClusterView& view) {
  if (matches_epoch_ != view.labels_epoch() || matches_.size() > 64) {
    matches_.clear();
    matches_epoch_ = view.labels_epoch();
  }
  auto [it, added] = matches_.try_emplace(selector.text());
  if (added) {
    const auto& nodes = view.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (selector.Matches(nodes[i].labels)) it->second.push_back(static_cast<uint32_t>(i));
    }
  }
  return it->second;
}

bool Scheduler::Feasible(const ClusterView& view, size_t index) const {
  return view.nodes()[index].alive && !view.nodes()[index].draining && feasible_shape_[view.shape_of(index)];
}

SchedulingDecision Scheduler::ScheduleHardAffinity(const SchedulingRequest& request, const ClusterView& view) {
  SchedulingDecision decision;
  const NodeView* target = view.Find(request.affinity_node);
  std::string why;
  if (!target) {
    why = ", which is not in the cluster";
  } else if (!target->alive) {
    why = ", which is dead";
  } else if (!target->total.Contains(request.resources)) {
    why = ", which does not have " + request.resources.ToString();
  } else if (!request.hard_labels.empty() && !request.hard_labels.Matches(target->labels)) {
    why = ", whose labels do not match '" + request.hard_labels.text() + "'";
  }
  if (!why.empty()) {
    decision.kind = SchedulingDecision::Kind::kInfeasible;
    decision.node_gone = !target || !target->alive;
    decision.reason = "hard node affinity to " + request.affinity_node.Hex() + why;
    return decision;
  }
  decision.node = target;
  decision.kind = !target->draining && target->available.Contains(request.resources) ? SchedulingDecision::Kind::kNode
                                                                                      : SchedulingDecision::Kind::kWait;
  return decision;
}

SchedulingDecision Scheduler::Schedule(const SchedulingRequest& request, const ClusterView& view) {
  if (request.strategy == SchedulingStrategy::kNodeAffinity && !request.affinity_soft) {
    return ScheduleHardAffinity(request, view);
  }
  SchedulingDecision decision;
  const auto& nodes = view.nodes();
  const auto& shapes = view.shapes();
  feasible_shape_.resize(shapes.size());
  for (size_t s = 0; s < shapes.size(); ++s) feasible_shape_[s] = shapes[s].Contains(request.resources);
  const std::vector<uint32_t>* subset = request.hard_labels.empty() ? nullptr : &NodesMatching(request.hard_labels, view);
  auto node_at = [&](size_t i) -> size_t { return subset ? (*subset)[i] : i; };
  size_t count = subset ? subset->size() : nodes.size();

  // The nodes the hybrid policy must see whatever the sample: this one and those
  // holding the task's arguments (and a soft affinity target).
  available_.clear();
  size_t pinned = 0;
  bool spread = request.strategy == SchedulingStrategy::kSpread;
  auto pin = [&](const NodeID& id) {
    const NodeView* n = view.Find(id);
    if (!n || std::find(available_.begin(), available_.end(), n) != available_.end()) return;
    size_t index = static_cast<size_t>(n - nodes.data());
    if (!Feasible(view, index) || !n->available.Contains(request.resources)) return;
    if (!request.hard_labels.empty() && !request.hard_labels.Matches(n->labels)) return;
    available_.push_back(n);
    ++pinned;
  };
  bool sampling = count > kSampleSize;
  if (sampling && !spread) {
    pin(view.local());
    if (request.strategy == SchedulingStrategy::kNodeAffinity) pin(request.affinity_node);
    for (const auto& [id, bytes] : request.argument_bytes) pin(id);
  }

  // Walk from a random point (spread: the cursor), keeping available nodes, until the
  // sample is full; a small cluster is walked whole, in order.
  size_t start = 0;
  if (sampling) start = spread ? spread_cursor_ % count : std::uniform_int_distribution<size_t>(0, count - 1)(random_);
  bool any_feasible = false;
  size_t walked = 0;
  for (; walked < count && available_.size() - pinned < kSampleSize; ++walked) {
    size_t pos = start + walked;
    if (pos >= count) pos -= count;
    size_t index = node_at(pos);
    if (!Feasible(view, index)) continue;
    any_feasible = true;
    const NodeView* n = &nodes[index];
    if (!n->available.Contains(request.resources)) continue;
    if (pinned > 0 && std::find(available_.begin(), available_.begin() + static_cast<long>(pinned), n) !=
                          available_.begin() + static_cast<long>(pinned)) {
      continue;
    }
    available_.push_back(n);
  }
  if (spread && sampling) spread_cursor_ = start + walked;
  any_feasible = any_feasible || pinned > 0;
  if (!any_feasible) {
    decision.kind = SchedulingDecision::Kind::kInfeasible;
    decision.reason = "no node has " + request.resources.ToString() +
                      (request.hard_labels.empty() ? "" : " with labels matching '" + request.hard_labels.text() + "'");
    return decision;
  }
  SchedulingPolicy* policy = &hybrid_;
  if (spread) policy = &spread_;
  if (request.strategy == SchedulingStrategy::kNodeAffinity) policy = &affinity_;
  decision.node = policy->Select(request, view, available_);
  if (decision.node) {
    decision.kind = SchedulingDecision::Kind::kNode;
    return decision;
  }
  // Nothing available now (so every node was walked).
  decision.kind = SchedulingDecision::Kind::kWait;
  if (spread) {
    // SPREAD waits at the next feasible node in turn, not here: when tasks are short,
    // the view lags what the nodes free, and a busy-looking cluster must not turn into
    // every task queued at this node (Ray's spread falls back the same way).
    for (size_t step = 0; step < count; ++step) {
      size_t pos = (spread_wait_cursor_ + step) % count;
      if (!Feasible(view, node_at(pos))) continue;
      spread_wait_cursor_ = pos + 1;
      decision.node = &nodes[node_at(pos)];
      return decision;
    }
  }
  // Wait at this node if it could run the request, else at the least used node that could.
  double best = 0;
  for (size_t pos = 0; pos < count; ++pos) {
    size_t index = node_at(pos);
    if (!Feasible(view, index)) continue;
    const NodeView* n = &nodes[index];
    if (n->id == view.local()) {
      decision.node = n;
      break;
    }
    double used = n->UtilizationWith(request.resources);
    if (!decision.node || used < best) {
      decision.node = n;
      best = used;
    }
  }
  return decision;
}

}  // namespace orb

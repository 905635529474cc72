// A scheduling policy: one method that ranks candidate nodes and picks one.
//
// The Scheduler has already filtered the cluster down to `candidates`: nodes that are
// alive, match the hard label selector and have the resources available now. A policy
// only chooses among them (nullptr: none is acceptable, e.g. hard affinity to a node that
// is not a candidate). Policies are stateless apart from their random source and cheap
// to call: the raylet runs one per lease request.
#pragma once

#include <vector>

#include "raylet/scheduling/cluster_view.h"
#include "raylet/scheduling/scheduling_request.h"

namespace orb {

class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  virtual const NodeView* Select(const SchedulingRequest& request, const ClusterView& view,
                                 const std::vector<const NodeView*>& candidates) = 0;
};

}  // namespace orb

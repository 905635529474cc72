// What a task or actor asks of the scheduler.
#pragma once

#include <map>

#include "common/id.h"
#include "common/resources.h"
#include "common/label_selector.h"

namespace orb {

enum class SchedulingStrategy {
  kDefault,       // hybrid: pack locally, then spread over the least loaded
  kSpread,        // spread over nodes, ignoring locality
  kNodeAffinity,  // a given node (hard: only there; soft: there if possible)
};

struct SchedulingRequest {
  ResourceSet resources;
  SchedulingStrategy strategy = SchedulingStrategy::kDefault;
  NodeID affinity_node;        // for kNodeAffinity
  bool affinity_soft = false;  // for kNodeAffinity
  LabelSelector hard_labels;   // nodes must match
  LabelSelector soft_labels;   // nodes that match are preferred
  // Bytes of the task's arguments held by each node; policies prefer the node with most.
  std::map<NodeID, uint64_t> argument_bytes;
};

}  // namespace orb

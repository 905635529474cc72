// Process-wide counters by name, for what a daemon drops or refuses: gossip it could
// not parse, calls without the cluster's token, corrupt object chunks. Daemons report
// a snapshot through their stats RPCs (raylet GetNodeStats, GCS GetMetrics); a later
// Prometheus endpoint reads the same registry.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace orb {

// Adds `delta` to the counter `name`, creating it at zero. Thread-safe.
void IncrementCounter(const std::string& name, int64_t delta = 1);
std::map<std::string, int64_t> CounterSnapshot();

}  // namespace orb

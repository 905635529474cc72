// The user metrics of <orb/metric.h> for the runtime's exporters: a worker sends them
// to its raylet, which serves them on the node's /metrics.
#pragma once

#include "common/prometheus_text.h"

namespace orb::metrics {

// Every series recorded in this process: names prefixed "orb_" with '.' as '_',
// counters suffixed _total, the unit in the help text.
void AppendUserMetrics(prom::Exposition* out);

}  // namespace orb::metrics

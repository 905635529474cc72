// Metrics on the wire between a worker and its raylet (rpc::MetricSample): a worker
// sends its families (its user metrics and the runtime's counters and RPC latencies),
// and the raylet merges every worker's into the node's /metrics.
#pragma once

#include <google/protobuf/repeated_field.h>

#include "common.pb.h"
#include "common/prometheus_text.h"

namespace orb {

// Every series of `families`, names as they are exported.
void ToSamples(const prom::Exposition& families, google::protobuf::RepeatedPtrField<rpc::MetricSample>* out);
// Adds `sample` to `out`: counters and histograms add up across senders; a gauge gets
// `gauge_labels` (say, the worker's ID) so that each sender's value stays its own.
void AddSample(const rpc::MetricSample& sample, const prom::Labels& gauge_labels, prom::Exposition* out);

}  // namespace orb

// Process-wide metrics of the runtime itself: counters by name (what a daemon drops or
// refuses: gossip it could not parse, calls without the cluster's token, corrupt object
// chunks), counters with labels (collective calls by backend) and latency histograms
// (RPCs by method). Daemons report the unlabelled counters through their stats RPCs
// (raylet GetNodeStats, GCS GetMetrics) and everything on /metrics (AppendProcessMetrics).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/prometheus_text.h"

namespace orb {

// Adds `delta` to the counter `name`, creating it at zero. Thread-safe.
void IncrementCounter(const std::string& name, int64_t delta = 1);
// The same for a counter with labels (exported as orb_<name>_total{labels}).
void IncrementCounter(const std::string& name, const prom::Labels& labels, double delta);
std::map<std::string, int64_t> CounterSnapshot();

// A histogram whose observations are lock-free; made once per series (GetHistogram) and
// kept for the life of the process.
class HistogramSeries {
 public:
  explicit HistogramSeries(std::vector<double> bounds);
  void Observe(double value);
  prom::Series Read(const prom::Labels& labels) const;

 private:
  const std::vector<double> bounds_;
  std::vector<std::atomic<uint64_t>> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<int64_t> sum_micros_{0};  // the sum, in millionths (atomic doubles are not lock-free everywhere)
};

// The series of histogram `name` (exported as orb_<name>) with these labels; made on
// first use with `bounds` (default: prom::LatencyBuckets, seconds). Thread-safe; the
// pointer stays valid until exit.
HistogramSeries* GetHistogram(const std::string& name, const prom::Labels& labels, const std::string& help,
                              const std::vector<double>& bounds = prom::LatencyBuckets());

// Every counter and histogram of this process, named orb_<name>[_total].
void AppendProcessMetrics(prom::Exposition* out);
// Counters by name (as CounterSnapshot gives them, or a component's stats), as
// orb_<name>_total.
void AppendCounters(const std::map<std::string, int64_t>& counters, prom::Exposition* out);

}  // namespace orb

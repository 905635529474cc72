#include "common/metrics.h"

#include <memory>
#include <mutex>

namespace orb {
namespace {

struct HistogramEntry {
  std::string name, help;
  prom::Labels labels;
  std::unique_ptr<HistogramSeries> series;
};

struct Registry {
  std::mutex mu;
  std::map<std::string, int64_t> counters;
  std::map<std::pair<std::string, prom::Labels>, double> labeled_counters;
  std::map<std::pair<std::string, prom::Labels>, HistogramEntry> histograms;
};

Registry& GlobalRegistry() {
  static Registry* registry = new Registry();  // never destroyed: counted from any thread until exit
  return *registry;
}

// What the unlabelled counters count, for their HELP lines.
std::string HelpOf(const std::string& name) {
  static const std::map<std::string, std::string> help = {
      {"gossip_received", "gossip messages received"},
      {"gossip_dropped_corrupt", "gossip messages dropped: bad checksum"},
      {"gossip_dropped_wrong_cluster", "gossip messages dropped: from another cluster"},
      {"gossip_dropped_malformed", "gossip messages dropped: unparsable"},
      {"gossip_suspicions", "members this process suspected"},
      {"gossip_refutations", "suspicions of this process it refuted"},
      {"gossip_declared_dead", "members the GCS declared dead"},
      {"gossip_rounds", "gossip rounds started"},
      {"gossip_sent", "gossip messages sent"},
      {"gossip_sent_bytes", "gossip bytes sent"},
      {"gossip_received_bytes", "gossip bytes received"},
      {"rpc_rejected_unauthenticated", "RPCs refused for a missing or wrong cluster token"},
      {"object_chunks_dropped_corrupt", "object chunks received with a bad checksum"},
      {"object_chunks_retried", "object chunk requests retried"},
      {"object_chunk_requests_rejected", "object chunk requests refused"},
      {"object_stream_rejected_unauthenticated", "object stream connections without the cluster token"},
      {"object_stream_malformed", "object stream requests that did not parse"},
      {"collective_calls", "collective operations this process completed, by backend and operation"},
      {"collective_bytes", "bytes of this member's tensors in collective operations, by backend and operation"},
      {"object_transfer_sent_bytes", "object bytes this node sent to other nodes"},
      {"object_stream_busy", "object stream connections refused: too many"},
      {"object_stream_unauthenticated_evicted", "object stream connections closed before authenticating"},
  };
  auto it = help.find(name);
  return it == help.end() ? name : it->second;
}

}  // namespace

void IncrementCounter(const std::string& name, int64_t delta) {
  Registry& r = GlobalRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.counters[name] += delta;
}

void IncrementCounter(const std::string& name, const prom::Labels& labels, double delta) {
  Registry& r = GlobalRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.labeled_counters[{name, labels}] += delta;
}

std::map<std::string, int64_t> CounterSnapshot() {
  Registry& r = GlobalRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.counters;
}

HistogramSeries::HistogramSeries(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(bounds_.size() + 1) {}

void HistogramSeries::Observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(static_cast<int64_t>(value * 1e6), std::memory_order_relaxed);
}

prom::Series HistogramSeries::Read(const prom::Labels& labels) const {
  prom::Series s;
  s.labels = labels;
  s.bounds = bounds_;
  for (const auto& b : buckets_) s.buckets.push_back(b.load(std::memory_order_relaxed));
  s.count = 0;
  for (uint64_t b : s.buckets) s.count += b;  // consistent with the buckets read
  s.value = sum_micros_.load(std::memory_order_relaxed) / 1e6;
  return s;
}

HistogramSeries* GetHistogram(const std::string& name, const prom::Labels& labels, const std::string& help,
                              const std::vector<double>& bounds) {
  Registry& r = GlobalRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  HistogramEntry& entry = r.histograms[{name, labels}];
  if (!entry.series) {
    entry.name = name;
    entry.help = help;
    entry.labels = labels;
    entry.series = std::make_unique<HistogramSeries>(bounds);
  }
  return entry.series.get();
}

void AppendCounters(const std::map<std::string, int64_t>& counters, prom::Exposition* out) {
  for (const auto& [name, value] : counters) out->Counter("orb_" + name + "_total", HelpOf(name), value);
}

void AppendProcessMetrics(prom::Exposition* out) {
  Registry& r = GlobalRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  AppendCounters(r.counters, out);
  for (const auto& [key, value] : r.labeled_counters) {
    out->Counter("orb_" + key.first + "_total", HelpOf(key.first), value, key.second);
  }
  for (const auto& [key, entry] : r.histograms) out->Histogram("orb_" + entry.name, entry.help, entry.series->Read(entry.labels));
}

}  // namespace orb

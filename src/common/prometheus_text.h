// The Prometheus text exposition format (version 0.0.4): families of series, written
// with HELP and TYPE lines, escaped labels and cumulative histogram buckets. Shared by
// the daemons' /metrics endpoints and by orb::metrics::ExportText().
//
//   prom::Exposition out;
//   out.Gauge("orb_object_store_used_bytes", "bytes held by objects", 1 << 20, {{"node_id", id}});
//   out.Counter("orb_leases_granted_total", "worker leases granted", 42);
//   std::string text = out.Text();
//
// Series of one family may be added in any order and from several sources (a raylet adds
// its workers'); series with the same labels are merged: counters and histograms add,
// gauges keep the last value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace orb::prom {

using Labels = std::map<std::string, std::string>;

enum class Type { kGauge, kCounter, kHistogram };

struct Series {
  Labels labels;
  double value = 0;                // gauge, counter; histogram: the sum of observations
  uint64_t count = 0;              // histogram: observations
  std::vector<double> bounds;      // histogram: upper bounds, increasing
  std::vector<uint64_t> buckets;   // histogram: per bucket (not cumulative), bounds.size() + 1
};

struct Family {
  std::string name;
  std::string help;
  Type type = Type::kGauge;
  std::map<Labels, Series> series;
};

class Exposition {
 public:
  void Gauge(const std::string& name, const std::string& help, double value, const Labels& labels = {});
  // `name` should end in _total (Prometheus's convention for counters).
  void Counter(const std::string& name, const std::string& help, double value, const Labels& labels = {});
  void Histogram(const std::string& name, const std::string& help, const Series& series);
  // Adds labels (e.g. the node's ID) to every series added after this call.
  void SetCommonLabels(Labels labels) { common_ = std::move(labels); }
  bool Has(const std::string& name) const { return families_.count(name) > 0; }
  const std::map<std::string, Family>& families() const { return families_; }

  // Families by name, series by labels; the format Prometheus reads.
  std::string Text() const;

 private:
  Series& SeriesOf(const std::string& name, const std::string& help, Type type, const Labels& labels);

  std::map<std::string, Family> families_;
  Labels common_;
};

// A metric name made valid: characters outside [a-zA-Z0-9_:] become '_'.
std::string SanitizeName(const std::string& name);
// Default latency buckets, in seconds: 100 µs to 10 s.
const std::vector<double>& LatencyBuckets();

}  // namespace orb::prom

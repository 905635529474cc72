// User metrics, in the shape of Ray's C++ metrics: gauges, counters, sums and histograms
// with tags. Values are kept in this process, readable with orb::metrics::Snapshot() and
// as Prometheus text with orb::metrics::ExportText().
//
//   orb::metrics::Counter rows("app.rows", "rows processed", "rows", {"stage"});
//   rows.Inc(100, {{"stage", "parse"}});
//   orb::metrics::Histogram latency("app.latency", "request latency", "ms", {1, 10, 100}, {"route"});
//   latency.Observe(4.2, {{"route", "/predict"}});
//
// Two metrics of one name and kind share their values (a metric may be made in every
// call); the same name with another kind is an orb::Error. Tags must be among the
// metric's tag keys. Thread-safe. Also reachable as orb::Gauge, orb::Counter, orb::Sum
// and orb::Histogram after `#include <orb/metric.h>`, as in Ray.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace orb::metrics {

using Tags = std::unordered_map<std::string, std::string>;

enum class Kind { GAUGE, COUNTER, SUM, HISTOGRAM };

// One series (a metric with one set of tag values) as recorded so far.
struct Sample {
  std::string name;
  std::string description;
  std::string unit;
  Kind kind = Kind::GAUGE;
  Tags tags;
  double value = 0;  // gauge: last set; counter and sum: total; histogram: sum of observations
  uint64_t count = 0;                  // observations (records) so far
  std::vector<double> boundaries;      // histogram: upper bounds of the buckets
  std::vector<uint64_t> bucket_counts; // histogram: per bucket, plus one for above the last bound
};

namespace internal {
struct Definition;
}  // namespace internal

class Metric {
 public:
  virtual ~Metric();
  std::string GetName() const;
  // Records one value: sets a gauge, adds to a counter or sum, observes for a histogram.
  void Record(double value, const Tags& tags = {});

 protected:
  Metric(Kind kind, const std::string& name, const std::string& description, const std::string& unit,
         const std::vector<std::string>& tag_keys, const std::vector<double>& boundaries = {});

 private:
  std::shared_ptr<internal::Definition> definition_;
};

// The last value set.
class Gauge : public Metric {
 public:
  Gauge(const std::string& name, const std::string& description, const std::string& unit,
        const std::vector<std::string>& tag_keys = {});
  void Set(double value, const Tags& tags = {}) { Record(value, tags); }
};

// A total that only goes up (a negative increment is an orb::Error).
class Counter : public Metric {
 public:
  Counter(const std::string& name, const std::string& description, const std::string& unit,
          const std::vector<std::string>& tag_keys = {});
  void Inc(double value = 1.0, const Tags& tags = {}) { Record(value, tags); }
};

// A total of recorded values, which may be negative.
class Sum : public Metric {
 public:
  Sum(const std::string& name, const std::string& description, const std::string& unit,
      const std::vector<std::string>& tag_keys = {});
};

// Observations counted in buckets bounded by `boundaries` (strictly increasing).
class Histogram : public Metric {
 public:
  Histogram(const std::string& name, const std::string& description, const std::string& unit,
            const std::vector<double>& boundaries, const std::vector<std::string>& tag_keys = {});
  void Observe(double value, const Tags& tags = {}) { Record(value, tags); }
};

// Every series recorded in this process, by name then tags.
std::vector<Sample> Snapshot();
// The same in the Prometheus text format: names prefixed "orb_" with '.' as '_'.
std::string ExportText();

}  // namespace orb::metrics

namespace orb {
using metrics::Counter;
using metrics::Gauge;
using metrics::Histogram;
using metrics::Sum;
}  // namespace orb

// The registry behind <orb/metric.h>: definitions by name, series by tag values.
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>

#include "core/user_metrics.h"
#include "orb/errors.h"
#include "orb/metric.h"

namespace orb::metrics {
namespace internal {

struct Series {
  Tags tags;
  double value = 0;
  uint64_t count = 0;
  std::vector<uint64_t> buckets;
};

struct Definition {
  std::string name, description, unit;
  Kind kind;
  std::vector<std::string> tag_keys;
  std::vector<double> boundaries;
  std::map<std::vector<std::string>, Series> series;  // tag values in tag_keys order; guarded by the registry
};

}  // namespace internal
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<internal::Definition>> by_name;
};

Registry& TheRegistry() {
  static Registry* registry = new Registry();  // never destroyed: metrics may outlive statics
  return *registry;
}

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::GAUGE: return "gauge";
    case Kind::COUNTER: return "counter";
    case Kind::SUM: return "sum";
    case Kind::HISTOGRAM: return "histogram";
  }
  return "?";
}

void CheckName(const std::string& name) {
  bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':');
  if (!ok) throw Error("metric name '" + name + "' must be letters, digits, '_', '.' or ':' and not start with a digit");
}

std::string PrometheusName(const std::string& name) {
  std::string out = "orb_" + name;
  std::replace(out.begin(), out.end(), '.', '_');
  return out;
}

}  // namespace

Metric::Metric(Kind kind, const std::string& name, const std::string& description, const std::string& unit,
               const std::vector<std::string>& tag_keys, const std::vector<double>& boundaries) {
  CheckName(name);
  for (size_t i = 1; i < boundaries.size(); ++i) {
    if (!(boundaries[i] > boundaries[i - 1])) throw Error("histogram '" + name + "': boundaries must increase strictly");
  }
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  auto& slot = registry.by_name[name];
  if (slot) {
    if (slot->kind != kind) {
      throw Error("metric '" + name + "' is already a " + KindName(slot->kind) + ", not a " + KindName(kind));
    }
    definition_ = slot;
    return;
  }
  slot = std::make_shared<internal::Definition>();
  slot->name = name;
  slot->description = description;
  slot->unit = unit;
  slot->kind = kind;
  slot->tag_keys = tag_keys;
  slot->boundaries = boundaries;
  definition_ = slot;
}

Metric::~Metric() = default;

std::string Metric::GetName() const { return definition_->name; }

void Metric::Record(double value, const Tags& tags) {
  internal::Definition& d = *definition_;
  if (!std::isfinite(value)) throw Error("metric '" + d.name + "': the value must be finite");
  if (d.kind == Kind::COUNTER && value < 0) throw Error("counter '" + d.name + "' cannot go down (Inc by a negative value)");
  std::vector<std::string> key(d.tag_keys.size());
  for (const auto& [k, v] : tags) {
    auto it = std::find(d.tag_keys.begin(), d.tag_keys.end(), k);
    if (it == d.tag_keys.end()) throw Error("metric '" + d.name + "' has no tag key '" + k + "'");
    key[it - d.tag_keys.begin()] = v;
  }
  std::lock_guard<std::mutex> lock(TheRegistry().mu);
  internal::Series& series = d.series[key];
  if (series.count == 0) {
    for (size_t i = 0; i < key.size(); ++i) series.tags[d.tag_keys[i]] = key[i];
    series.buckets.assign(d.kind == Kind::HISTOGRAM ? d.boundaries.size() + 1 : 0, 0);
  }
  ++series.count;
  switch (d.kind) {
    case Kind::GAUGE:
      series.value = value;
      break;
    case Kind::COUNTER:
    case Kind::SUM:
      series.value += value;
      break;
    case Kind::HISTOGRAM: {
      series.value += value;
      size_t bucket = std::lower_bound(d.boundaries.begin(), d.boundaries.end(), value) - d.boundaries.begin();
      ++series.buckets[bucket];
      break;
    }
  }
}

Gauge::Gauge(const std::string& name, const std::string& description, const std::string& unit,
             const std::vector<std::string>& tag_keys)
    : Metric(Kind::GAUGE, name, description, unit, tag_keys) {}
Counter::Counter(const std::string& name, const std::string& description, const std::string& unit,
                 const std::vector<std::string>& tag_keys)
    : Metric(Kind::COUNTER, name, description, unit, tag_keys) {}
Sum::Sum(const std::string& name, const std::string& description, const std::string& unit,
         const std::vector<std::string>& tag_keys)
    : Metric(Kind::SUM, name, description, unit, tag_keys) {}
Histogram::Histogram(const std::string& name, const std::string& description, const std::string& unit,
                     const std::vector<double>& boundaries, const std::vector<std::string>& tag_keys)
    : Metric(Kind::HISTOGRAM, name, description, unit, tag_keys, boundaries) {}

std::vector<Sample> Snapshot() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  std::vector<Sample> samples;
  for (const auto& [name, d] : registry.by_name) {
    for (const auto& [key, series] : d->series) {
      Sample s;
      s.name = d->name;
      s.description = d->description;
      s.unit = d->unit;
      s.kind = d->kind;
      s.tags = series.tags;
      s.value = series.value;
      s.count = series.count;
      s.boundaries = d->boundaries;
      s.bucket_counts = series.buckets;
      samples.push_back(std::move(s));
    }
  }
  return samples;
}

void AppendUserMetrics(prom::Exposition* out) {
  for (const Sample& s : Snapshot()) {
    std::string name = PrometheusName(s.name);
    std::string help = s.description + (s.unit.empty() ? "" : " (" + s.unit + ")");
    prom::Labels labels(s.tags.begin(), s.tags.end());
    switch (s.kind) {
      case Kind::COUNTER:
        out->Counter(name + "_total", help, s.value, labels);
        break;
      case Kind::GAUGE:
      case Kind::SUM:  // a sum may go down: a gauge to Prometheus
        out->Gauge(name, help, s.value, labels);
        break;
      case Kind::HISTOGRAM: {
        prom::Series series;
        series.labels = std::move(labels);
        series.value = s.value;
        series.count = s.count;
        series.bounds = s.boundaries;
        series.buckets = s.bucket_counts;
        out->Histogram(name, help, series);
        break;
      }
    }
  }
}

std::string ExportText() {
  prom::Exposition out;
  AppendUserMetrics(&out);
  return out.Text();
}

}  // namespace orb::metrics

// The metric rules of a GPU platform, beside the demand-driven planner. Each is a
// policy in the cluster YAML's `metric_rules:`; each round they turn measurements into
// adjustments of the planner's input:
//
// - scale_out: a node type whose utilisation (percent, e.g. DCGM's GPU utilisation)
//   stays above `utilisation_above` for `for_s` gets `add_nodes` more nodes (a floor
//   under the type that stays until a scale_in rule lifts it). It fires again only after
//   the condition has held for another `for_s`.
// - scale_in: a node type whose utilisation stays at or below `utilisation_below` for
//   `for_s` is scaled in to min_workers: the scale_out floor is lifted and its idle
//   nodes are terminated without waiting for idle_timeout.
// - replace_on_oom: a node type whose nodes were OOM-killed `oom_kills` times within
//   `window_s` is replaced by the next larger type (the smallest type holding all of its
//   resources with more memory): it is launched no more, its min_workers move to the
//   larger type, and its shapes go there.
// - forecast: demand for a node type's main resource (GPU if it has GPUs, else CPU: in
//   use plus queued, cluster-wide) is sampled every `sample_s`; an additive Holt-Winters
//   model over seasons of `season_s` forecasts it `horizon_s` ahead, and the type gets a
//   floor of the nodes that forecast needs beyond the other nodes' capacity.
//
// Utilisation comes from a Prometheus server's /api/v1/query when `prometheus:` is
// configured (any PromQL returning percent per node type, by the label `type_label`),
// and otherwise from orb's own node reports (the share of the type's GPUs, else CPUs,
// that leases hold). The clock is the autoscaler's (injected), so tests run a 30-minute
// rule in seconds.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autoscaler/holt_winters.h"
#include "autoscaler/scaling_planner.h"

namespace orb::autoscaler {

struct PrometheusConfig {
  std::string url;  // http://host:port
  std::string query = "avg by (node_type) (DCGM_FI_DEV_GPU_UTIL)";
  std::string type_label = "node_type";
};

struct ScaleOutRule {
  std::string node_type;
  double utilisation_above = 80;
  std::chrono::milliseconds for_time{std::chrono::minutes(5)};
  int add_nodes = 1;
};

struct ScaleInRule {
  std::string node_type;
  double utilisation_below = 0;
  std::chrono::milliseconds for_time{std::chrono::minutes(30)};
};

struct OomRule {
  int oom_kills = 3;
  std::chrono::milliseconds window{std::chrono::minutes(10)};
};

struct ForecastRule {
  std::string node_type;
  std::chrono::milliseconds sample{std::chrono::minutes(1)};
  std::chrono::milliseconds season{std::chrono::hours(24)};
  std::chrono::milliseconds horizon{std::chrono::minutes(10)};
  double alpha = 0.5, beta = 0.1, gamma = 0.3;
};

struct MetricRulesConfig {
  std::optional<PrometheusConfig> prometheus;
  std::vector<ScaleOutRule> scale_out;
  std::vector<ScaleInRule> scale_in;
  std::optional<OomRule> replace_on_oom;
  std::vector<ForecastRule> forecast;
  bool empty() const { return scale_out.empty() && scale_in.empty() && !replace_on_oom && forecast.empty(); }
};

// What the rules see each round.
struct MetricObservation {
  std::chrono::steady_clock::time_point now;
  std::map<std::string, double> utilisation;  // percent by node type (types without a value: unknown)
  std::map<std::string, int> nodes;           // managed nodes by type, launching included
  std::vector<std::string> oom_killed_types;  // node types of nodes found OOM-killed this round
  // For forecasts: per main resource ("CPU", "GPU"), cluster-wide demand (in use +
  // queued) and the capacity of nodes of other types.
  std::map<std::string, double> demand;
  std::map<std::string, std::map<std::string, double>> capacity_without_type;  // type → resource → amount
};

class MetricRules {
 public:
  MetricRules(MetricRulesConfig config, std::vector<NodeTypeLimits> types);

  // Updates the rules' state with `seen` and adjusts `input` (node type floors, types
  // replaced, nodes to scale in). Returns the decisions taken this round, in words.
  std::vector<std::string> Apply(const MetricObservation& seen, ScalingInput* input);

  // The next larger type of `type` (for replace_on_oom), or "".
  std::string NextLarger(const std::string& type) const;
  // The resource a type's utilisation and forecast are measured by: GPU or CPU.
  std::string MainResource(const std::string& type) const;

 private:
  struct Timer {
    std::optional<std::chrono::steady_clock::time_point> since;
  };
  const NodeTypeLimits* Type(const std::string& name) const;

  MetricRulesConfig config_;
  std::vector<NodeTypeLimits> types_;
  std::vector<Timer> out_timers_;
  std::vector<Timer> in_timers_;
  std::map<std::string, int> floors_;           // from scale_out
  std::map<std::string, std::string> out_reasons_;  // why, by type
  std::map<std::string, bool> scaling_in_;      // a scale_in rule holds
  std::map<std::string, std::string> replaced_;  // type → the larger type launched instead
  std::map<std::string, std::vector<std::chrono::steady_clock::time_point>> ooms_;
  struct Forecaster {
    std::unique_ptr<HoltWinters> model;
    std::optional<std::chrono::steady_clock::time_point> last_sample;
    int floor = 0;
  };
  std::vector<Forecaster> forecasters_;
};

}  // namespace orb::autoscaler

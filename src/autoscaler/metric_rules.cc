#include "autoscaler/metric_rules.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace orb::autoscaler {
namespace {

int64_t Secs(std::chrono::steady_clock::duration d) { return std::chrono::duration_cast<std::chrono::seconds>(d).count(); }

std::string Percent(double v) { return absl::StrCat(std::round(v * 10) / 10, "%"); }

}  // namespace

MetricRules::MetricRules(MetricRulesConfig config, std::vector<NodeTypeLimits> types)
    : config_(std::move(config)), types_(std::move(types)) {
  out_timers_.resize(config_.scale_out.size());
  in_timers_.resize(config_.scale_in.size());
  for (const auto& f : config_.forecast) {
    HoltWintersParams p;
    p.alpha = f.alpha;
    p.beta = f.beta;
    p.gamma = f.gamma;
    p.season_length = static_cast<size_t>(std::max<int64_t>(1, f.season.count() / std::max<int64_t>(1, f.sample.count())));
    Forecaster forecaster;
    forecaster.model = std::make_unique<HoltWinters>(p);
    forecasters_.push_back(std::move(forecaster));
  }
}

const NodeTypeLimits* MetricRules::Type(const std::string& name) const {
  for (const auto& t : types_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string MetricRules::MainResource(const std::string& type) const {
  const NodeTypeLimits* t = Type(type);
  return t && t->resources.Get("GPU") > 0 ? "GPU" : "CPU";
}

std::string MetricRules::NextLarger(const std::string& name) const {
  const NodeTypeLimits* from = Type(name);
  if (!from) return "";
  const NodeTypeLimits* best = nullptr;
  for (const auto& t : types_) {
    if (t.name == name || t.max_workers <= 0 || !t.resources.Contains(from->resources)) continue;
    if (t.resources.Get("memory") <= from->resources.Get("memory") && from->resources.Get("memory") > 0) continue;
    if (t.resources == from->resources) continue;
    // The smallest such type: least memory, then fewest CPUs.
    if (!best || t.resources.Get("memory") < best->resources.Get("memory") ||
        (t.resources.Get("memory") == best->resources.Get("memory") && t.resources.Get("CPU") < best->resources.Get("CPU"))) {
      best = &t;
    }
  }
  return best ? best->name : "";
}

std::vector<std::string> MetricRules::Apply(const MetricObservation& seen, ScalingInput* input) {
  std::vector<std::string> decisions;
  const auto now = seen.now;

  if (config_.replace_on_oom) {
    const OomRule& rule = *config_.replace_on_oom;
    for (const auto& type : seen.oom_killed_types) ooms_[type].push_back(now);
    for (auto& [type, times] : ooms_) {
      times.erase(std::remove_if(times.begin(), times.end(), [&](auto t) { return now - t > rule.window; }), times.end());
      if (static_cast<int>(times.size()) < rule.oom_kills || replaced_.count(type)) continue;
      std::string larger = NextLarger(type);
      replaced_[type] = larger;
      decisions.push_back(larger.empty()
                              ? absl::StrCat("node type ", type, ": ", times.size(), " OOM kills in ", Secs(rule.window),
                                             " s, and no larger node type to replace it with")
                              : absl::StrCat("replace node type ", type, " by ", larger, ": ", times.size(),
                                             " OOM kills in ", Secs(rule.window), " s"));
    }
  }

  for (size_t i = 0; i < config_.scale_out.size(); ++i) {
    const ScaleOutRule& rule = config_.scale_out[i];
    Timer& timer = out_timers_[i];
    auto u = seen.utilisation.find(rule.node_type);
    if (u == seen.utilisation.end() || u->second <= rule.utilisation_above) {
      timer.since.reset();
      continue;
    }
    if (!timer.since) timer.since = now;
    if (now - *timer.since < rule.for_time) continue;
    const NodeTypeLimits* type = Type(rule.node_type);
    auto have = seen.nodes.find(rule.node_type);
    int floor = (have == seen.nodes.end() ? 0 : have->second) + rule.add_nodes;
    if (type) floor = std::min(floor, type->max_workers);
    timer.since = now;  // held for another for_s before it fires again
    if (floor <= floors_[rule.node_type]) continue;
    floors_[rule.node_type] = floor;
    out_reasons_[rule.node_type] = absl::StrCat("metric rule: utilisation above ", Percent(rule.utilisation_above),
                                                " for ", Secs(rule.for_time), " s");
    decisions.push_back(absl::StrCat("scale out ", rule.node_type, " to ", floor, " nodes: utilisation ", Percent(u->second),
                                     " above ", Percent(rule.utilisation_above), " for ", Secs(rule.for_time), " s"));
  }

  for (size_t i = 0; i < config_.scale_in.size(); ++i) {
    const ScaleInRule& rule = config_.scale_in[i];
    Timer& timer = in_timers_[i];
    auto u = seen.utilisation.find(rule.node_type);
    if (u == seen.utilisation.end() || u->second > rule.utilisation_below) {
      timer.since.reset();
      scaling_in_[rule.node_type] = false;
      continue;
    }
    if (!timer.since) timer.since = now;
    if (now - *timer.since < rule.for_time) continue;
    if (!scaling_in_[rule.node_type]) {
      decisions.push_back(absl::StrCat("scale in ", rule.node_type, " to min_workers: utilisation ", Percent(u->second),
                                       " at or below ", Percent(rule.utilisation_below), " for ", Secs(rule.for_time), " s"));
    }
    scaling_in_[rule.node_type] = true;
    floors_.erase(rule.node_type);
  }

  std::map<std::string, int> forecast_floors;
  std::map<std::string, std::string> why_floor;
  for (size_t i = 0; i < config_.forecast.size(); ++i) {
    const ForecastRule& rule = config_.forecast[i];
    Forecaster& f = forecasters_[i];
    std::string resource = MainResource(rule.node_type);
    if (!f.last_sample || now - *f.last_sample >= rule.sample) {
      auto d = seen.demand.find(resource);
      f.model->Add(d == seen.demand.end() ? 0 : d->second);
      f.last_sample = now;
    }
    const NodeTypeLimits* type = Type(rule.node_type);
    if (!f.model->Ready() || !type) continue;
    size_t steps = static_cast<size_t>(std::max<int64_t>(1, rule.horizon.count() / std::max<int64_t>(1, rule.sample.count())));
    double expected = f.model->Forecast(steps);
    double other = 0;
    auto cap = seen.capacity_without_type.find(rule.node_type);
    if (cap != seen.capacity_without_type.end() && cap->second.count(resource)) other = cap->second.at(resource);
    double per_node = type->resources.Get(resource);
    int need = per_node > 0 ? static_cast<int>(std::ceil(std::max(0.0, expected - other) / per_node - 1e-9)) : 0;
    need = std::clamp(need, 0, type->max_workers);
    if (need != f.floor) {
      decisions.push_back(absl::StrCat("forecast: ", resource, " demand ", std::round(expected * 10) / 10, " in ",
                                       Secs(rule.horizon), " s; keeping at least ", need, " ", rule.node_type, " nodes"));
      f.floor = need;
    }
    forecast_floors[rule.node_type] = std::max(forecast_floors[rule.node_type], need);
  }

  for (auto& t : input->types) {
    int from_rule = floors_.count(t.name) ? floors_[t.name] : 0;
    int from_forecast = forecast_floors.count(t.name) ? forecast_floors[t.name] : 0;
    int floor = std::max(from_rule, from_forecast);
    if (floor <= t.min_workers) continue;
    t.min_workers = std::min(floor, t.max_workers);
    t.min_reason = from_rule >= from_forecast ? out_reasons_[t.name] : "metric rule: forecast demand";
  }
  for (const auto& [from, to] : replaced_) {
    if (to.empty()) continue;
    NodeTypeLimits* small = nullptr;
    NodeTypeLimits* large = nullptr;
    for (auto& t : input->types) {
      if (t.name == from) small = &t;
      if (t.name == to) large = &t;
    }
    if (!small || !large) continue;
    large->min_workers = std::min(large->max_workers, std::max(large->min_workers, small->min_workers));
    small->min_workers = 0;
    small->max_workers = 0;
  }
  for (auto& node : input->nodes) {
    auto it = scaling_in_.find(node.node_type);
    bool rule_idle = it != scaling_in_.end() && it->second;
    bool replaced = replaced_.count(node.node_type) && !replaced_[node.node_type].empty();
    if ((rule_idle || replaced) && node.idle_for.count() > 0) {
      node.idle_for = std::max(node.idle_for, input->idle_timeout);
      node.scale_in_reason = rule_idle ? "metric rule: scale in to min_workers"
                                       : "node type replaced by " + replaced_[node.node_type];
    }
  }
  return decisions;
}

}  // namespace orb::autoscaler

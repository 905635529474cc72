// The metric rules under an injected clock: a GPU type above 80% for 5 minutes gets a
// node, at 0% for 30 minutes it scales in to min; OOM kills move a type to a larger
// one; a Holt-Winters forecast adds nodes before a daily peak.
#include <catch2/catch.hpp>

#include <cmath>

#include "autoscaler/holt_winters.h"
#include "autoscaler/metric_rules.h"
#include "autoscaler/prometheus_source.h"

using namespace orb::autoscaler;
using orb::ResourceSet;
using namespace std::chrono_literals;

namespace {

ResourceSet R(std::map<std::string, double> m) { return ResourceSet::FromMap(m); }

std::vector<NodeTypeLimits> Types() {
  return {{"small", R({{"CPU", 2}, {"memory", 4e9}}), 1, 4},
          {"large", R({{"CPU", 8}, {"memory", 32e9}}), 0, 4},
          {"gpu", R({{"CPU", 8}, {"GPU", 1}}), 0, 3}};
}

ScalingInput Input() {
  ScalingInput in;
  in.types = Types();
  in.idle_timeout = 60min;
  return in;
}

struct Clock {
  std::chrono::steady_clock::time_point now{std::chrono::hours(1)};
};

int MinOf(const ScalingInput& in, const std::string& type) {
  for (const auto& t : in.types) {
    if (t.name == type) return t.min_workers;
  }
  return -1;
}

}  // namespace

TEST_CASE("GPU utilisation above 80% for 5 minutes adds a node; 0% for 30 minutes scales in", "[metric_rules]") {
  MetricRulesConfig config;
  config.scale_out = {{"gpu", 80, 5min, 1}};
  config.scale_in = {{"gpu", 0, 30min}};
  MetricRules rules(config, Types());
  Clock clock;
  MetricObservation seen;
  seen.nodes = {{"gpu", 1}};
  seen.utilisation = {{"gpu", 85}};
  std::vector<std::string> fired;
  for (int minute = 0; minute <= 4; ++minute) {
    seen.now = clock.now + std::chrono::minutes(minute);
    ScalingInput in = Input();
    auto d = rules.Apply(seen, &in);
    CHECK(d.empty());
    CHECK(MinOf(in, "gpu") == 0);
  }
  seen.now = clock.now + 5min;
  ScalingInput in = Input();
  auto d = rules.Apply(seen, &in);
  REQUIRE(d.size() == 1);
  CHECK(d[0].find("scale out gpu to 2 nodes") != std::string::npos);
  CHECK(MinOf(in, "gpu") == 2);

  // A dip below the threshold restarts the 5 minutes.
  seen.nodes = {{"gpu", 2}};
  seen.utilisation = {{"gpu", 50}};
  seen.now += 1min;
  in = Input();
  rules.Apply(seen, &in);
  CHECK(MinOf(in, "gpu") == 2);  // the floor stays

  // Idle at 0% for 30 minutes: back to min_workers, idle nodes terminable at once.
  seen.utilisation = {{"gpu", 0}};
  ScalingInput idle = Input();
  idle.nodes = {{"g1", "gpu", false, R({{"GPU", 1}}), R({{"GPU", 1}}), 2min}};
  for (int minute = 0; minute < 30; ++minute) {
    seen.now += 1min;
    idle.nodes[0].idle_for = 2min;
    idle.types = Types();
    rules.Apply(seen, &idle);
  }
  CHECK(idle.nodes[0].idle_for == 2min);  // not yet
  seen.now += 1min;
  idle.types = Types();
  auto d2 = rules.Apply(seen, &idle);
  REQUIRE(d2.size() == 1);
  CHECK(d2[0].find("scale in gpu to min_workers") != std::string::npos);
  CHECK(MinOf(idle, "gpu") == 0);
  CHECK(idle.nodes[0].idle_for >= idle.idle_timeout);
  ScalingPlan plan = PlanScaling(idle);
  REQUIRE(plan.terminate.size() == 1);
  CHECK(plan.terminate[0] == "g1");
}

TEST_CASE("a type OOM-killed 3 times in 10 minutes is replaced by the next larger type", "[metric_rules]") {
  MetricRulesConfig config;
  config.replace_on_oom = OomRule{3, 10min};
  MetricRules rules(config, Types());
  CHECK(rules.NextLarger("small") == "large");
  Clock clock;
  MetricObservation seen;
  seen.now = clock.now;
  seen.oom_killed_types = {"small", "small"};
  ScalingInput in = Input();
  CHECK(rules.Apply(seen, &in).empty());
  seen.now += 11min;  // the first two fall out of the window
  seen.oom_killed_types = {"small"};
  in = Input();
  CHECK(rules.Apply(seen, &in).empty());
  seen.now += 1min;
  seen.oom_killed_types = {"small", "small"};
  in = Input();
  auto d = rules.Apply(seen, &in);
  REQUIRE(d.size() == 1);
  CHECK(d[0] == "replace node type small by large: 3 OOM kills in 600 s");
  CHECK(MinOf(in, "small") == 0);
  CHECK(MinOf(in, "large") == 1);  // small's min_workers moved
  in.queued = {{R({{"CPU", 1}}), 2}};
  ScalingPlan plan = PlanScaling(in);
  CHECK(plan.launch.count("small") == 0);
  CHECK(plan.launch.at("large") == 1);
}

TEST_CASE("Holt-Winters learns a season and forecasts its peak", "[metric_rules]") {
  HoltWintersParams p;
  p.season_length = 24;
  HoltWinters hw(p);
  auto demand = [](int hour) { return 10.0 + ((hour % 24) >= 9 && (hour % 24) < 17 ? 40.0 : 0.0); };
  for (int h = 0; h < 24 * 4; ++h) hw.Add(demand(h));
  REQUIRE(hw.Ready());
  // Now at hour 96 (midnight): 9 hours on, the working day starts.
  CHECK(std::fabs(hw.Forecast(10) - 50.0) < 5.0);  // hour 105 = 9 a.m.
  CHECK(std::fabs(hw.Forecast(1) - 10.0) < 5.0);   // hour 96 = midnight
}

TEST_CASE("a forecast rule keeps nodes for the demand expected within its horizon", "[metric_rules]") {
  MetricRulesConfig config;
  ForecastRule f;
  f.node_type = "large";
  f.sample = 1h;
  f.season = 24h;
  f.horizon = 1h;
  config.forecast = {f};
  MetricRules rules(config, Types());
  Clock clock;
  MetricObservation seen;
  seen.capacity_without_type["large"]["CPU"] = 2;  // the head
  std::vector<int> floors;
  for (int h = 0; h < 24 * 3 + 9; ++h) {
    seen.now = clock.now + std::chrono::hours(h);
    int hour = h % 24;
    seen.demand["CPU"] = 2 + ((hour >= 9 && hour < 17) ? 30 : 0);
    ScalingInput in = Input();
    rules.Apply(seen, &in);
    floors.push_back(MinOf(in, "large"));
  }
  // At 8 a.m. of day 4 (h = 80) the 9 a.m. peak of 32 CPUs is an hour away: 30 CPUs
  // beyond the head's 2 need 4 nodes of 8 CPUs.
  CHECK(floors[80] == 4);
  CHECK(floors[78] == 0);  // 6 a.m.: nothing expected yet
}

TEST_CASE("Prometheus query replies are read by the type label", "[metric_rules]") {
  auto v = ParsePrometheusVector(
      R"({"status":"success","data":{"resultType":"vector","result":[
          {"metric":{"node_type":"gpu"},"value":[1700000000.1,"85.5"]},
          {"metric":{"node_type":"cpu"},"value":[1700000000.1,"3"]}]}})",
      "node_type");
  REQUIRE(v.ok());
  CHECK(v->at("gpu") == 85.5);
  CHECK(v->at("cpu") == 3);
  auto bad = ParsePrometheusVector(R"({"status":"error","errorType":"bad_data","error":"parse error at char 5"})",
                                   "node_type");
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("parse error") != std::string::npos);
  CHECK_FALSE(ParsePrometheusVector(R"({"status":"success","data":{"resultType":"matrix","result":[]}})", "x").ok());
}

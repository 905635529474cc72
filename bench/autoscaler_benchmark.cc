// orb_autoscaler_benchmark: how long the autoscaler's planner takes to decide, for
// 10,000 pending shapes over 1,000 nodes (and smaller cases for the trend). One JSON
// line per case: {"metric": "autoscaler_decision_ms", "nodes": N, "pending_shapes": S,
// "distinct_shapes": D, "median_ms": ..., "launches": ..., "terminations": ...}.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>

#include "autoscaler/scaling_planner.h"

using namespace orb;
using namespace orb::autoscaler;

namespace {

ScalingInput MakeInput(int nodes, int pending, int distinct, std::mt19937_64& random) {
  ScalingInput in;
  in.types = {{"cpu_small", ResourceSet::FromMap({{"CPU", 4}, {"memory", 16e9}}), 0, 2000},
              {"cpu_large", ResourceSet::FromMap({{"CPU", 32}, {"memory", 128e9}}), 0, 500},
              {"gpu", ResourceSet::FromMap({{"CPU", 16}, {"GPU", 8}, {"memory", 256e9}}), 0, 200}};
  in.max_workers = 5000;
  in.upscaling_speed = 1000;  // measure the packing, not the cap
  for (int i = 0; i < nodes; ++i) {
    const auto& type = in.types[i % 3];
    PlannerNode n;
    n.key = "node-" + std::to_string(i);
    n.node_type = type.name;
    n.total = type.resources;
    auto m = type.resources.ToMap();
    for (auto& [name, amount] : m) amount = std::floor(amount * static_cast<double>(random() % 100) / 100.0);
    n.available = ResourceSet::FromMap(m);
    n.idle_for = std::chrono::milliseconds(i % 7 == 0 ? 600000 : 0);
    in.nodes.push_back(std::move(n));
  }
  std::vector<ResourceSet> shapes;
  for (int i = 0; i < distinct; ++i) {
    std::map<std::string, double> s = {{"CPU", 0.5 * static_cast<double>(1 + random() % 16)},
                                       {"memory", 1e9 * static_cast<double>(1 + random() % 32)}};
    if (i % 10 == 0) s["GPU"] = static_cast<double>(1 + random() % 2);
    shapes.push_back(ResourceSet::FromMap(s));
  }
  for (int i = 0; i < pending; ++i) in.queued.push_back({shapes[i % distinct], 1});
  return in;
}

}  // namespace

int main() {
  std::mt19937_64 random(11);
  struct Case {
    int nodes, pending, distinct;
  };
  for (Case c : {Case{100, 1000, 50}, Case{1000, 10000, 50}, Case{1000, 10000, 1000}, Case{1000, 10000, 10000}}) {
    ScalingInput in = MakeInput(c.nodes, c.pending, c.distinct, random);
    std::vector<double> ms;
    ScalingPlan plan;
    for (int rep = 0; rep < 5; ++rep) {
      auto start = std::chrono::steady_clock::now();
      plan = PlanScaling(in);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    int launches = 0;
    for (const auto& [type, n] : plan.launch) launches += n;
    std::cout << "{\"metric\": \"autoscaler_decision_ms\", \"nodes\": " << c.nodes << ", \"pending_shapes\": " << c.pending
              << ", \"distinct_shapes\": " << c.distinct << ", \"median_ms\": " << ms[ms.size() / 2]
              << ", \"launches\": " << launches << ", \"terminations\": " << plan.terminate.size() << "}" << std::endl;
  }
  return 0;
}

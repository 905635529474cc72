// orb_scheduler_benchmark: scheduling decisions per second over views of 1,000 and
// 10,000 simulated nodes, for each policy. One JSON line per (policy, nodes), with the
// target (100,000 decisions/s at 10,000 nodes). The local node is full, so hybrid
// decisions spill (the costly case) rather than pack locally.
#include <chrono>
#include <iostream>
#include <random>

#include "raylet/scheduling/scheduler.h"

using namespace orb;

int main() {
  std::mt19937_64 random(7);
  for (int size : {1000, 10000}) {
    std::vector<NodeView> nodes;
    nodes.reserve(size);
    for (int i = 0; i < size; ++i) {
      NodeView n;
      n.id = NodeID::FromRandom();
      double cpus = 16;
      n.total = ResourceSet::FromMap({{"CPU", cpus}, {"memory", 64e9}});
      n.available = ResourceSet::FromMap({{"CPU", static_cast<double>(random() % 17)}, {"memory", 32e9}});
      n.labels = {{"zone", "z" + std::to_string(i % 8)}};
      nodes.push_back(std::move(n));
    }
    nodes[0].available = ResourceSet::FromMap({{"memory", 32e9}});  // the local node is full
    ClusterView view(nodes[0].id, nodes);
    struct Case {
      const char* name;
      SchedulingRequest request;
    };
    std::vector<Case> cases(4);
    cases[0].name = "hybrid";
    cases[1].name = "spread";
    cases[1].request.strategy = SchedulingStrategy::kSpread;
    cases[2].name = "node_affinity";
    cases[2].request.strategy = SchedulingStrategy::kNodeAffinity;
    cases[2].request.affinity_node = nodes[size / 2].id;
    cases[3].name = "label_selector";
    cases[3].request.hard_labels = *LabelSelector::Parse("zone in (z1,z2)");
    for (auto& c : cases) {
      c.request.resources = ResourceSet::FromMap({{"CPU", 4}});
      Scheduler scheduler;
      int decisions = 50000;
      size_t placed = 0;
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < decisions; ++i) placed += scheduler.Schedule(c.request, view).node != nullptr;
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cout << "{\"metric\": \"scheduling_decisions_per_second\", \"policy\": \"" << c.name
                << "\", \"nodes\": " << size << ", \"value\": " << decisions / seconds
                << ", \"placed\": " << placed << (size >= 10000 ? ", \"target\": 100000" : "") << "}"
                << std::endl;
    }
  }
  return 0;
}

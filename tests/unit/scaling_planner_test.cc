// The autoscaler's planner: what it adds and removes for a given cluster and demand.
#include <catch2/catch.hpp>

#include "autoscaler/scaling_planner.h"

using namespace orb::autoscaler;
using orb::ResourceSet;
using namespace std::chrono_literals;

namespace {

ResourceSet R(std::map<std::string, double> m) { return ResourceSet::FromMap(m); }

ScalingInput TwoTypes() {
  ScalingInput in;
  in.types = {{"cpu", R({{"CPU", 2}}), 0, 4}, {"big", R({{"CPU", 8}}), 0, 1}, {"gpu", R({{"CPU", 8}, {"GPU", 1}}), 0, 2}};
  // The head: 2 CPUs, busy.
  in.nodes = {{"head", "", false, R({{"CPU", 2}}), R({}), 0ms}};
  in.idle_timeout = 60s;
  return in;
}

int Launches(const ScalingPlan& plan, const std::string& type) {
  auto it = plan.launch.find(type);
  return it == plan.launch.end() ? 0 : it->second;
}

}  // namespace

TEST_CASE("queued 1-CPU work that the head cannot take adds 2-CPU nodes up to max_workers", "[planner]") {
  {
    ScalingInput in = TwoTypes();
    in.queued = {{R({{"CPU", 1}}), 8}};
    ScalingPlan plan = PlanScaling(in);
    CHECK(Launches(plan, "big") == 1);  // one 8-CPU node is used best by 8 one-CPU tasks
    CHECK(Launches(plan, "cpu") == 0);
  }
  ScalingInput in = TwoTypes();
  in.types[1].max_workers = 0;  // no big nodes
  in.queued = {{R({{"CPU", 1}}), 10}};
  ScalingPlan plan = PlanScaling(in);
  CHECK(Launches(plan, "cpu") == 4);  // 10 CPUs wanted, 4 x 2 allowed
  CHECK(Launches(plan, "gpu") == 0);  // never a GPU node for CPU work
  CHECK(plan.launch_reasons.at("cpu").find("queued {CPU: 1}") != std::string::npos);
  REQUIRE_FALSE(plan.reasons.empty());
  bool capped = false;
  for (const auto& r : plan.reasons) capped |= r.find("max_workers") != std::string::npos;
  CHECK(capped);
}

TEST_CASE("work that fits in free room or in nodes being launched adds nothing", "[planner]") {
  ScalingInput in = TwoTypes();
  in.nodes.push_back({"w1", "cpu", false, R({{"CPU", 2}}), R({{"CPU", 2}}), 0ms});
  in.nodes.push_back({"w2", "cpu", true, R({{"CPU", 2}}), R({}), 0ms});  // launching: counts as empty
  in.queued = {{R({{"CPU", 1}}), 4}};
  ScalingPlan plan = PlanScaling(in);
  CHECK(plan.launch.empty());
}

TEST_CASE("a GPU shape brings up the GPU type; a shape no type has is infeasible", "[planner]") {
  ScalingInput in = TwoTypes();
  in.queued = {{R({{"GPU", 1}}), 1}, {R({{"CPU", 64}}), 1}};
  ScalingPlan plan = PlanScaling(in);
  CHECK(Launches(plan, "gpu") == 1);
  CHECK(Launches(plan, "cpu") == 0);
  REQUIRE(plan.infeasible.size() == 1);
  CHECK(plan.infeasible[0].find("CPU: 64") != std::string::npos);
}

TEST_CASE("work pinned to the busy head waits for it: no node is added and it is not infeasible", "[planner]") {
  ScalingInput in = TwoTypes();
  in.queued = {{R({{"CPU", 1}, {"node:__internal_head__", 0.001}}), 3}};
  ScalingPlan plan = PlanScaling(in);
  CHECK(plan.launch.empty());
  CHECK(plan.infeasible.empty());
  REQUIRE(plan.reasons.size() == 1);
  CHECK(plan.reasons[0].find("pinned to one node") != std::string::npos);
}

TEST_CASE("a larger type is chosen for a shape the smaller one cannot hold", "[planner]") {
  ScalingInput in = TwoTypes();
  in.queued = {{R({{"CPU", 6}}), 1}};
  ScalingPlan plan = PlanScaling(in);
  CHECK(Launches(plan, "big") == 1);  // the only type without GPUs that has 6 CPUs
  CHECK(Launches(plan, "gpu") == 0);

  in.queued = {{R({{"CPU", 6}}), 2}};  // big is at its max: GPU nodes are not used for CPU work
  ScalingPlan plan2 = PlanScaling(in);
  CHECK(Launches(plan2, "big") == 1);
  CHECK(Launches(plan2, "gpu") == 0);
  bool said = false;
  for (const auto& r : plan2.reasons) said |= r.find("max_workers") != std::string::npos;
  CHECK(said);
}

TEST_CASE("CPU work rides along on a GPU node launched for GPU work", "[planner]") {
  ScalingInput in = TwoTypes();
  in.types[0].max_workers = 0;  // no CPU-only types
  in.types[1].max_workers = 0;
  in.queued = {{R({{"GPU", 1}, {"CPU", 1}}), 1}, {R({{"CPU", 1}}), 7}};
  ScalingPlan plan = PlanScaling(in);
  CHECK(Launches(plan, "gpu") == 1);  // 8 CPUs: the GPU task and the seven CPU tasks
  CHECK(plan.infeasible.empty());
}

TEST_CASE("placement groups: STRICT_SPREAD needs distinct nodes, STRICT_PACK one node", "[planner]") {
  ScalingInput in = TwoTypes();
  in.nodes[0].available = R({{"CPU", 2}});  // the head is free
  in.placement_groups = {{"spread", BundleStrategy::kStrictSpread, {R({{"CPU", 1}}), R({{"CPU", 1}}), R({{"CPU", 1}})}}};
  ScalingPlan plan = PlanScaling(in);
  CHECK(Launches(plan, "cpu") == 2);  // one bundle on the head, two new nodes

  ScalingInput packed = TwoTypes();
  packed.placement_groups = {{"pack", BundleStrategy::kStrictPack, {R({{"CPU", 2}}), R({{"CPU", 2}})}}};
  ScalingPlan plan2 = PlanScaling(packed);
  CHECK(Launches(plan2, "big") == 1);  // 4 CPUs on one node: the 8-CPU type
  CHECK(Launches(plan2, "cpu") == 0);
}

TEST_CASE("min_workers are kept and requested resources are held against total capacity", "[planner]") {
  ScalingInput in = TwoTypes();
  in.types[0].min_workers = 2;
  ScalingPlan plan = PlanScaling(in);
  CHECK(Launches(plan, "cpu") == 2);

  ScalingInput req = TwoTypes();
  req.nodes.push_back({"w1", "cpu", false, R({{"CPU", 2}}), R({{"CPU", 2}}), 3600s});  // idle for an hour
  req.requested = {R({{"CPU", 1}}), R({{"CPU", 1}}), R({{"CPU", 1}}), R({{"CPU", 1}})};
  ScalingPlan plan2 = PlanScaling(req);
  // 4 CPUs: the head's 2 (busy, but requests count totals) and w1's 2; nothing to add,
  // and w1 is kept although idle.
  CHECK(plan2.launch.empty());
  CHECK(plan2.terminate.empty());
}

TEST_CASE("idle nodes past idle_timeout are terminated, never below min_workers", "[planner]") {
  ScalingInput in = TwoTypes();
  in.types[0].min_workers = 1;
  in.nodes.push_back({"w1", "cpu", false, R({{"CPU", 2}}), R({{"CPU", 2}}), 120s});
  in.nodes.push_back({"w2", "cpu", false, R({{"CPU", 2}}), R({{"CPU", 2}}), 90s});
  in.nodes.push_back({"w3", "cpu", false, R({{"CPU", 2}}), R({{"CPU", 2}}), 30s});  // not yet
  ScalingPlan plan = PlanScaling(in);
  // Three nodes, min 1: the two idle past the timeout could go, but w3 stays (not idle
  // long enough) so both w1 and w2 go.
  REQUIRE(plan.terminate.size() == 2);
  CHECK(plan.terminate[0] == "w1");
  CHECK(plan.terminate[1] == "w2");

  in.nodes.pop_back();  // without w3 only one may go
  ScalingPlan plan2 = PlanScaling(in);
  REQUIRE(plan2.terminate.size() == 1);
  CHECK(plan2.terminate[0] == "w1");  // the longest idle
}

TEST_CASE("an idle node that queued work would use is kept", "[planner]") {
  ScalingInput in = TwoTypes();
  in.nodes.push_back({"w1", "cpu", false, R({{"CPU", 2}}), R({{"CPU", 2}}), 120s});
  in.queued = {{R({{"CPU", 1}}), 1}};
  ScalingPlan plan = PlanScaling(in);
  CHECK(plan.terminate.empty());
  CHECK(plan.launch.empty());
}

TEST_CASE("upscaling_speed bounds the launches pending at once", "[planner]") {
  ScalingInput in = TwoTypes();
  in.types[0].max_workers = 100;
  in.types[1].max_workers = 0;
  in.queued = {{R({{"CPU", 2}}), 50}};
  in.upscaling_speed = 1.0;
  ScalingPlan plan = PlanScaling(in);
  CHECK(Launches(plan, "cpu") == 5);  // max(5, 1.0 x 1 node)
  in.nodes.push_back({"p1", "cpu", true, R({{"CPU", 2}}), R({}), 0ms});
  in.nodes.push_back({"p2", "cpu", true, R({{"CPU", 2}}), R({}), 0ms});
  ScalingPlan plan2 = PlanScaling(in);
  CHECK(Launches(plan2, "cpu") == 3);  // two already pending
}

TEST_CASE("the cluster's max_workers caps every type together", "[planner]") {
  ScalingInput in = TwoTypes();
  in.max_workers = 3;
  in.queued = {{R({{"CPU", 2}}), 10}};
  ScalingPlan plan = PlanScaling(in);
  CHECK(Launches(plan, "cpu") + Launches(plan, "big") + Launches(plan, "gpu") == 3);
}

TEST_CASE("queued work goes only to nodes and node types its label selector accepts", "[planner]") {
  ScalingInput in;
  in.types = {{"a100", R({{"CPU", 8}, {"GPU", 1}}), 0, 2, "", {{"accelerator", "a100"}, {"orb.io/node-type", "a100"}}},
              {"h200", R({{"CPU", 8}, {"GPU", 1}}), 0, 2, "", {{"accelerator", "h200"}, {"orb.io/node-type", "h200"}}}};
  // An a100 node with its GPU free.
  PlannerNode free_a100{"n1", "a100", false, R({{"CPU", 8}, {"GPU", 1}}), R({{"CPU", 8}, {"GPU", 1}})};
  free_a100.labels = {{"accelerator", "a100"}, {"orb.io/node-type", "a100"}};  // as its raylet carries them
  in.nodes = {free_a100};
  ShapeDemand wants_h200{R({{"GPU", 1}}), 1, *orb::LabelSelector::Parse("accelerator = h200")};
  in.queued = {wants_h200};
  ScalingPlan plan = PlanScaling(in);
  CHECK(Launches(plan, "h200") == 1);  // the free a100 does not count
  CHECK(Launches(plan, "a100") == 0);
  CHECK(plan.launch_reasons.at("h200").find("accelerator = h200") != std::string::npos);

  in.queued = {{R({{"GPU", 1}}), 1, *orb::LabelSelector::Parse("accelerator in (b200)")}};
  ScalingPlan none = PlanScaling(in);
  CHECK(none.launch.empty());
  REQUIRE(none.infeasible.size() == 1);
  CHECK(none.infeasible[0].find("with labels matching 'accelerator in (b200)'") != std::string::npos);

  in.queued = {{R({{"GPU", 1}}), 1, *orb::LabelSelector::Parse("orb.io/node-type = a100")}};
  CHECK(PlanScaling(in).launch.empty());  // the free a100 node takes it
}

TEST_CASE("a label selector that only a GPU type matches brings that type up for CPU work", "[planner]") {
  ScalingInput in;
  in.types = {{"cpu", R({{"CPU", 4}}), 0, 2, "", {{"orb.io/node-type", "cpu"}}},
              {"gpu", R({{"CPU", 8}, {"GPU", 1}}), 0, 2, "", {{"accelerator", "h200"}, {"orb.io/node-type", "gpu"}}}};
  in.queued = {{R({{"CPU", 1}}), 1, *orb::LabelSelector::Parse("accelerator = h200")}};
  CHECK(Launches(PlanScaling(in), "gpu") == 1);
  in.queued = {{R({{"CPU", 1}}), 1}};  // without a selector: the CPU type, GPU nodes are conserved
  ScalingPlan plan = PlanScaling(in);
  CHECK(Launches(plan, "cpu") == 1);
  CHECK(Launches(plan, "gpu") == 0);
}

TEST_CASE("a warm pool keeps idle nodes ready and replaces the ones that take work", "[planner]") {
  ScalingInput in = TwoTypes();
  in.types[0].warm_pool = 2;
  // Nothing waits: two nodes are launched to stand ready.
  ScalingPlan plan = PlanScaling(in);
  CHECK(Launches(plan, "cpu") == 2);
  CHECK(plan.launch_reasons.at("cpu").find("warm_pool 2") != std::string::npos);
  // Two launching nodes count as the pool: nothing more.
  in.nodes.push_back({"w1", "cpu", true, R({{"CPU", 2}}), R({}), 0ms});
  in.nodes.push_back({"w2", "cpu", true, R({{"CPU", 2}}), R({}), 0ms});
  CHECK(PlanScaling(in).launch.empty());
  // Joined and idle past idle_timeout: kept, they are the pool.
  in.nodes[1] = {"w1", "cpu", false, R({{"CPU", 2}}), R({{"CPU", 2}}), 120s};
  in.nodes[2] = {"w2", "cpu", false, R({{"CPU", 2}}), R({{"CPU", 2}}), 120s};
  plan = PlanScaling(in);
  CHECK(plan.launch.empty());
  CHECK(plan.terminate.empty());
  // One takes work: a new one is launched to refill the pool.
  in.nodes[1] = {"w1", "cpu", false, R({{"CPU", 2}}), R({}), 0ms};
  plan = PlanScaling(in);
  CHECK(Launches(plan, "cpu") == 1);
  // A third idle node beyond the pool goes after idle_timeout (the longest idle first).
  in.nodes[1] = {"w1", "cpu", false, R({{"CPU", 2}}), R({{"CPU", 2}}), 300s};
  in.nodes.push_back({"w3", "cpu", false, R({{"CPU", 2}}), R({{"CPU", 2}}), 90s});
  plan = PlanScaling(in);
  CHECK(plan.launch.empty());
  CHECK(plan.terminate == std::vector<std::string>{"w1"});
  // The pool never passes max_workers.
  ScalingInput capped = TwoTypes();
  capped.types[1].warm_pool = 3;  // "big" allows 1
  CHECK(Launches(PlanScaling(capped), "big") == 1);
}

// Filter → rank → bind over hand-built cluster views.
#include <catch2/catch.hpp>
#include <set>

#include "raylet/scheduling/scheduler.h"

using namespace orb;

namespace {

NodeView MakeNode(double cpus, double cpus_free, std::map<std::string, std::string> labels = {},
                  std::map<std::string, double> custom = {}) {
  NodeView n;
  n.id = NodeID::FromRandom();
  auto total = custom;
  total["CPU"] = cpus;
  n.total = ResourceSet::FromMap(total);
  auto free = custom;
  free["CPU"] = cpus_free;
  n.available = ResourceSet::FromMap(free);
  n.labels = std::move(labels);
  return n;
}

SchedulingRequest Cpu(double n) {
  SchedulingRequest r;
  r.resources = ResourceSet::FromMap({{"CPU", n}});
  return r;
}

}  // namespace

TEST_CASE("label selectors parse every form and reject malformed ones", "[scheduling]") {
  auto s = LabelSelector::Parse("zone in (a, b), gpu != h100, ssd, !spot");
  REQUIRE(s.ok());
  CHECK(s->Matches({{"zone", "a"}, {"ssd", "1"}}));
  CHECK(s->Matches({{"zone", "b"}, {"gpu", "a100"}, {"ssd", ""}}));
  CHECK_FALSE(s->Matches({{"zone", "c"}, {"ssd", "1"}}));
  CHECK_FALSE(s->Matches({{"zone", "a"}, {"gpu", "h100"}, {"ssd", "1"}}));
  CHECK_FALSE(s->Matches({{"zone", "a"}, {"ssd", "1"}, {"spot", "yes"}}));
  CHECK(LabelSelector::Parse("zone notin (c)")->Matches({}));
  CHECK(LabelSelector::Parse("tier = gold")->Matches({{"tier", "gold"}}));
  CHECK(LabelSelector::Parse("")->Matches({}));
  for (const char* bad : {"zone in (a,b", "zone in ()", "zone in a", "= x", "a,,b", "bad key!"}) {
    auto parsed = LabelSelector::Parse(bad);
    INFO(bad);
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("a request no node can hold is infeasible; one that fits later waits", "[scheduling]") {
  Scheduler scheduler;
  ClusterView view(NodeID::Nil(), {MakeNode(4, 0), MakeNode(2, 2)});
  CHECK(scheduler.Schedule(Cpu(8), view).kind == SchedulingDecision::Kind::kInfeasible);
  CHECK(scheduler.Schedule(Cpu(3), view).kind == SchedulingDecision::Kind::kWait);
  auto d = scheduler.Schedule(Cpu(2), view);
  REQUIRE(d.kind == SchedulingDecision::Kind::kNode);
  CHECK(d.node->id == view.nodes()[1].id);
}

TEST_CASE("hybrid packs on the local node below the threshold, then spreads", "[scheduling]") {
  Scheduler scheduler;
  NodeView local = MakeNode(8, 8);
  NodeView other = MakeNode(8, 8);
  ClusterView view(local.id, {other, local});
  CHECK(scheduler.Schedule(Cpu(4), view).node->id == local.id);  // 4/8 = threshold: still local
  view.Upsert([&] {
    NodeView busy = local;
    busy.available = ResourceSet::FromMap({{"CPU", 3}});
    return busy;
  }());
  CHECK(scheduler.Schedule(Cpu(1), view).node->id == other.id);  // local would pass 0.5
}

TEST_CASE("custom resources and hard labels filter; soft labels prefer", "[scheduling]") {
  Scheduler scheduler;
  NodeView a = MakeNode(4, 4, {{"zone", "a"}});
  NodeView b = MakeNode(4, 4, {{"zone", "b"}}, {{"accel", 2}});
  ClusterView view(a.id, {a, b});
  SchedulingRequest accel;
  accel.resources = ResourceSet::FromMap({{"accel", 1}});
  CHECK(scheduler.Schedule(accel, view).node->id == b.id);
  SchedulingRequest zone_b = Cpu(1);
  zone_b.hard_labels = *LabelSelector::Parse("zone in (b)");
  for (int i = 0; i < 10; ++i) CHECK(scheduler.Schedule(zone_b, view).node->id == b.id);
  zone_b.hard_labels = *LabelSelector::Parse("zone = c");
  CHECK(scheduler.Schedule(zone_b, view).kind == SchedulingDecision::Kind::kInfeasible);
  SchedulingRequest prefer_b = Cpu(1);
  prefer_b.soft_labels = *LabelSelector::Parse("zone = b");
  CHECK(scheduler.Schedule(prefer_b, view).node->id == b.id);
}

TEST_CASE("spread places successive tasks on different nodes", "[scheduling]") {
  Scheduler scheduler;
  std::vector<NodeView> nodes = {MakeNode(4, 4), MakeNode(4, 4), MakeNode(4, 4)};
  ClusterView view(nodes[0].id, nodes);
  SchedulingRequest r = Cpu(1);
  r.strategy = SchedulingStrategy::kSpread;
  std::set<NodeID> used;
  for (int i = 0; i < 3; ++i) used.insert(scheduler.Schedule(r, view).node->id);
  CHECK(used.size() == 3);
}

TEST_CASE("node affinity: hard waits for or rejects its node, soft falls back", "[scheduling]") {
  Scheduler scheduler;
  NodeView a = MakeNode(4, 4);
  NodeView full = MakeNode(4, 0);
  NodeView small = MakeNode(1, 1);
  ClusterView view(a.id, {a, full, small});
  SchedulingRequest hard = Cpu(1);
  hard.strategy = SchedulingStrategy::kNodeAffinity;
  hard.affinity_node = full.id;
  CHECK(scheduler.Schedule(hard, view).kind == SchedulingDecision::Kind::kWait);
  // A node that can never hold the request: infeasible, naming why, but not gone (it
  // may grow, or this view be stale: the raylet waits a grace period).
  SchedulingRequest too_big = hard;
  too_big.resources = ResourceSet::FromMap({{"CPU", 2}});
  too_big.affinity_node = small.id;
  auto cannot = scheduler.Schedule(too_big, view);
  CHECK(cannot.kind == SchedulingDecision::Kind::kInfeasible);
  CHECK_THAT(cannot.reason, Catch::Contains("does not have"));
  CHECK_FALSE(cannot.node_gone);
  hard.affinity_node = NodeID::FromRandom();
  auto missing = scheduler.Schedule(hard, view);
  CHECK(missing.kind == SchedulingDecision::Kind::kInfeasible);
  CHECK_THAT(missing.reason, Catch::Contains("not in the cluster"));
  CHECK(missing.node_gone);
  SchedulingRequest soft = hard;
  soft.affinity_node = full.id;
  soft.affinity_soft = true;
  CHECK(scheduler.Schedule(soft, view).node->id == a.id);
}

TEST_CASE("locality prefers the node holding the arguments", "[scheduling]") {
  Scheduler scheduler;
  NodeView local = MakeNode(4, 4);
  NodeView holder = MakeNode(4, 4);
  ClusterView view(local.id, {local, holder});
  SchedulingRequest r = Cpu(1);
  r.argument_bytes[holder.id] = 64 << 20;
  r.argument_bytes[local.id] = 100;
  CHECK(scheduler.Schedule(r, view).node->id == holder.id);
}

// A decision at 10,000 nodes ranks a sample, not the cluster: these check it still
// finds what a scan would.
TEST_CASE("at 10,000 nodes the one node with room is found, wherever it is", "[scheduling]") {
  std::vector<NodeView> nodes;
  for (int i = 0; i < 10000; ++i) nodes.push_back(MakeNode(4, 0, {{"zone", "z" + std::to_string(i % 10)}}));
  nodes[7777].available = ResourceSet::FromMap({{"CPU", 4}});
  ClusterView view(nodes[0].id, nodes);
  Scheduler scheduler;
  for (auto strategy : {SchedulingStrategy::kDefault, SchedulingStrategy::kSpread}) {
    SchedulingRequest r = Cpu(2);
    r.strategy = strategy;
    for (int i = 0; i < 20; ++i) CHECK(scheduler.Schedule(r, view).node->id == nodes[7777].id);
  }
  // Waiting (nothing has room) queues at the local node when it could run the request.
  auto wait = scheduler.Schedule(Cpu(5), view);
  CHECK(wait.kind == SchedulingDecision::Kind::kInfeasible);
  SchedulingRequest r = Cpu(3);
  r.hard_labels = *LabelSelector::Parse("zone = z3");
  auto queued = scheduler.Schedule(r, view);  // z3 nodes are full; 7777 is z7
  CHECK(queued.kind == SchedulingDecision::Kind::kWait);
  CHECK(queued.node->labels.at("zone") == "z3");
}

TEST_CASE("at 10,000 nodes hybrid still packs locally and honours locality; spread covers the cluster",
          "[scheduling]") {
  std::vector<NodeView> nodes;
  for (int i = 0; i < 10000; ++i) nodes.push_back(MakeNode(8, 8));
  ClusterView view(nodes[4242].id, nodes);
  Scheduler scheduler;
  CHECK(scheduler.Schedule(Cpu(1), view).node->id == nodes[4242].id);
  SchedulingRequest r = Cpu(1);
  r.argument_bytes[nodes[9001].id] = 1 << 20;
  CHECK(scheduler.Schedule(r, view).node->id == nodes[9001].id);
  SchedulingRequest spread = Cpu(1);
  spread.strategy = SchedulingStrategy::kSpread;
  std::set<NodeID> used;
  for (int i = 0; i < 1000; ++i) used.insert(scheduler.Schedule(spread, view).node->id);
  CHECK(used.size() == 1000);
}

TEST_CASE("a label selector's matches follow label changes", "[scheduling]") {
  std::vector<NodeView> nodes;
  for (int i = 0; i < 200; ++i) nodes.push_back(MakeNode(4, 4, {{"zone", "a"}}));
  ClusterView view(nodes[0].id, nodes);
  Scheduler scheduler;
  SchedulingRequest r = Cpu(1);
  r.hard_labels = *LabelSelector::Parse("zone = b");
  CHECK(scheduler.Schedule(r, view).kind == SchedulingDecision::Kind::kInfeasible);
  NodeView moved = nodes[150];
  moved.labels["zone"] = "b";
  view.Upsert(moved);
  for (int i = 0; i < 5; ++i) CHECK(scheduler.Schedule(r, view).node->id == moved.id);
}

TEST_CASE("a node whose capacity keeps changing does not grow the view's shapes", "[scheduling]") {
  NodeView local = MakeNode(4, 4);
  ClusterView view(local.id, {local, MakeNode(4, 4)});
  for (int i = 0; i < 1000; ++i) {
    NodeView changed = local;
    changed.total = ResourceSet::FromMap({{"CPU", 4}, {"bundle_" + std::to_string(i), 1}});
    view.Upsert(changed);
  }
  CHECK(view.shapes().size() <= 2 * view.nodes().size() + 17);
  SchedulingRequest r;
  r.resources = ResourceSet::FromMap({{"bundle_999", 1}});
  Scheduler scheduler;
  CHECK(scheduler.Schedule(r, view).node->id == local.id);
  r.resources = ResourceSet::FromMap({{"bundle_5", 1}});
  CHECK(scheduler.Schedule(r, view).kind == SchedulingDecision::Kind::kInfeasible);
}

TEST_CASE("spread waits at each feasible node in turn when none has room", "[scheduling]") {
  // The view shows every node full (it lags nodes that run short tasks): SPREAD requests
  // must not all queue at the local node.
  std::vector<NodeView> nodes = {MakeNode(2, 0), MakeNode(2, 0), MakeNode(2, 0), MakeNode(1, 0)};
  ClusterView view(nodes[0].id, nodes);
  Scheduler scheduler;
  SchedulingRequest r = Cpu(2);
  r.strategy = SchedulingStrategy::kSpread;
  std::map<NodeID, int> waits;
  for (int i = 0; i < 30; ++i) {
    auto d = scheduler.Schedule(r, view);
    REQUIRE(d.kind == SchedulingDecision::Kind::kWait);
    waits[d.node->id]++;
  }
  CHECK(waits.size() == 3);  // the 1-CPU node cannot run it
  for (const auto& [id, n] : waits) CHECK(n == 10);
}

TEST_CASE("a draining node gets no new work, even work that asks for nothing or prefers it", "[scheduling]") {
  Scheduler scheduler;
  NodeView leaving = MakeNode(8, 8);
  leaving.draining = true;
  NodeView staying = MakeNode(2, 1);
  ClusterView view(NodeID::Nil(), {leaving, staying});
  for (double cpus : {0.0, 1.0}) {
    auto d = scheduler.Schedule(Cpu(cpus), view);
    REQUIRE(d.kind == SchedulingDecision::Kind::kNode);
    CHECK(d.node->id == staying.id);
  }
  SchedulingRequest prefers = Cpu(0);
  prefers.strategy = SchedulingStrategy::kNodeAffinity;
  prefers.affinity_node = leaving.id;
  prefers.affinity_soft = true;
  auto soft = scheduler.Schedule(prefers, view);
  REQUIRE(soft.kind == SchedulingDecision::Kind::kNode);
  CHECK(soft.node->id == staying.id);
  // Hard affinity waits: the node may take work again if its drain is refused.
  prefers.affinity_soft = false;
  CHECK(scheduler.Schedule(prefers, view).kind == SchedulingDecision::Kind::kWait);
  // Only draining nodes could hold it: it waits rather than going there.
  CHECK(scheduler.Schedule(Cpu(4), view).kind != SchedulingDecision::Kind::kNode);
}

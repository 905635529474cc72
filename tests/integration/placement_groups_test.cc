// Placement groups on three nodes started with the CLI: the four strategies, tasks and
// actors in bundles, a group that waits for room, removal ending what runs inside, 50
// create/remove cycles leaving resources as they were, and bad input.
#include <signal.h>

#include <catch2/catch.hpp>
#include <unordered_map>
#include <set>
#include <thread>

#include "cli_cluster.h"

namespace {

std::string WhereAmI() { return orb::GetRuntimeContext().GetNodeId(); }
ORB_REMOTE(WhereAmI);

// Starts a task with no placement of its own and waits up to `timeout_ms` for it.
std::string ChildNode(int timeout_ms) { return *orb::Task(WhereAmI).Remote().Get(timeout_ms); }
ORB_REMOTE(ChildNode);

class Pinned {
 public:
  static Pinned* Create() { return new Pinned(); }
  std::string Node() { return orb::GetRuntimeContext().GetNodeId(); }
};
ORB_REMOTE(Pinned::Create, &Pinned::Node);

// Three nodes of 2 CPUs each.
orb::testing::CliCluster& Cluster() {
  static orb::testing::CliCluster cluster("pg", "--num-cpus 2 --object-store-memory 134217728",
                                          {"--num-cpus 2 --object-store-memory 134217728",
                                           "--num-cpus 2 --object-store-memory 134217728"});
  return cluster;
}

orb::PlacementGroup Create(orb::PlacementStrategy strategy, int bundles, double cpus) {
  std::vector<std::map<std::string, double>> b(bundles, {{"CPU", cpus}});
  return orb::CreatePlacementGroup({"", b, strategy});
}

// The node each bundle's task runs on.
std::vector<std::string> NodesOfBundles(const orb::PlacementGroup& pg) {
  std::vector<orb::ObjectRef<std::string>> refs;
  for (size_t i = 0; i < pg.GetBundles().size(); ++i) {
    refs.push_back(orb::Task(WhereAmI).SetPlacementGroup(pg, static_cast<int>(i)).Remote());
  }
  std::vector<std::string> nodes;
  for (const auto& n : orb::Get(refs, 60000)) nodes.push_back(*n);
  return nodes;
}

double TotalAvailable(const std::string& resource) {
  double sum = 0;
  for (const auto& n : orb::Nodes()) {
    if (!n.alive) continue;
    auto it = n.resources_available.find(resource);
    if (it != n.resources_available.end()) sum += it->second;
  }
  return sum;
}

bool AnyGroupResources() {
  for (const auto& n : orb::Nodes()) {
    for (const auto& [name, amount] : n.resources_total) {
      if (name.find("_group_") != std::string::npos) return true;
    }
  }
  return false;
}

bool ResourcesSettleTo(double cpus) {
  return orb::testing::WaitFor([&] { return TotalAvailable("CPU") == cpus && !AnyGroupResources(); },
                               std::chrono::seconds(15));
}

}  // namespace

TEST_CASE("STRICT_SPREAD puts every bundle on its own node, or waits", "[pg]") {
  Cluster();
  REQUIRE(ResourcesSettleTo(6));
  auto pg = Create(orb::PlacementStrategy::STRICT_SPREAD, 3, 1);
  REQUIRE(pg.Wait(30));
  auto nodes = NodesOfBundles(pg);
  CHECK(std::set<std::string>(nodes.begin(), nodes.end()).size() == 3);
  auto four = Create(orb::PlacementStrategy::STRICT_SPREAD, 4, 1);
  CHECK_FALSE(four.Wait(2));  // three nodes only: it stays pending
  orb::RemovePlacementGroup(four.GetID());
  orb::RemovePlacementGroup(pg.GetID());
  CHECK(ResourcesSettleTo(6));
}

TEST_CASE("STRICT_PACK and PACK put bundles that fit one node together", "[pg]") {
  Cluster();
  for (auto strategy : {orb::PlacementStrategy::STRICT_PACK, orb::PlacementStrategy::PACK}) {
    auto pg = Create(strategy, 2, 1);
    REQUIRE(pg.Wait(30));
    auto nodes = NodesOfBundles(pg);
    CHECK(nodes[0] == nodes[1]);
    orb::RemovePlacementGroup(pg.GetID());
  }
  // Too big for one node: STRICT_PACK waits, PACK uses several nodes.
  auto strict = Create(orb::PlacementStrategy::STRICT_PACK, 3, 1.5);
  CHECK_FALSE(strict.Wait(2));
  orb::RemovePlacementGroup(strict.GetID());
  auto packed = Create(orb::PlacementStrategy::PACK, 3, 1.5);
  REQUIRE(packed.Wait(30));
  auto nodes = NodesOfBundles(packed);
  CHECK(std::set<std::string>(nodes.begin(), nodes.end()).size() == 3);
  orb::RemovePlacementGroup(packed.GetID());
  CHECK(ResourcesSettleTo(6));
}

TEST_CASE("SPREAD uses different nodes while it can", "[pg]") {
  Cluster();
  auto pg = Create(orb::PlacementStrategy::SPREAD, 3, 1);
  REQUIRE(pg.Wait(30));
  auto nodes = NodesOfBundles(pg);
  CHECK(std::set<std::string>(nodes.begin(), nodes.end()).size() == 3);
  orb::RemovePlacementGroup(pg.GetID());
  CHECK(ResourcesSettleTo(6));
}

TEST_CASE("a group that does not fit waits, and is placed when resources free up", "[pg]") {
  Cluster();
  auto everything = Create(orb::PlacementStrategy::STRICT_SPREAD, 3, 2);
  REQUIRE(everything.Wait(30));
  auto waiting = Create(orb::PlacementStrategy::PACK, 1, 1);
  CHECK_FALSE(waiting.Wait(2));
  orb::RemovePlacementGroup(everything.GetID());
  CHECK(waiting.Wait(30));
  orb::RemovePlacementGroup(waiting.GetID());
  CHECK(ResourcesSettleTo(6));
}

TEST_CASE("a task that captures its children runs them in its group; one that does not leaves them out", "[pg]") {
  Cluster();
  auto everything = Create(orb::PlacementStrategy::STRICT_SPREAD, 3, 2);  // every CPU of the cluster
  REQUIRE(everything.Wait(30));
  auto nodes = NodesOfBundles(everything);
  std::string child = *orb::Task(ChildNode).SetPlacementGroup(everything, 0, true).Remote(30000).Get(60000);
  CHECK(std::count(nodes.begin(), nodes.end(), child) == 1);
  // Not captured, the child waits for a CPU outside the group, and there is none.
  CHECK_THROWS_WITH(orb::Task(ChildNode).SetPlacementGroup(everything, 0).Remote(2000).Get(60000),
                    Catch::Contains("GetTimeoutError") || Catch::Contains("timed out"));
  orb::RemovePlacementGroup(everything.GetID());
  CHECK(ResourcesSettleTo(6));
}

TEST_CASE("an actor lives in its bundle; removing the group ends it", "[pg][actors]") {
  Cluster();
  auto pg = Create(orb::PlacementStrategy::STRICT_SPREAD, 2, 1);
  REQUIRE(pg.Wait(30));
  auto nodes = NodesOfBundles(pg);
  auto actor = orb::Actor(Pinned::Create).SetResource("CPU", 1).SetPlacementGroup(pg, 1).Remote();
  CHECK(*actor.Task(&Pinned::Node).Remote().Get(30000) == nodes[1]);
  orb::RemovePlacementGroup(pg.GetID());
  CHECK_FALSE(pg.Wait(1));  // a removed group is not ready, though it was when created
  // The actor's process is killed as the bundles are returned, just after Remove returns.
  CHECK(orb::testing::WaitFor(
      [&] {
        try {
          actor.Task(&Pinned::Node).Remote().Get(30000);
          return false;
        } catch (const orb::ActorDiedError&) {
          return true;
        }
      },
      std::chrono::seconds(30)));
  CHECK_THROWS_WITH(actor.Task(&Pinned::Node).Remote().Get(30000), Catch::Contains("placement group was removed"));
  CHECK(ResourcesSettleTo(6));
}

TEST_CASE("50 create/remove cycles leave every node's resources as they were", "[pg]") {
  Cluster();
  REQUIRE(ResourcesSettleTo(6));
  auto strategies = {orb::PlacementStrategy::PACK, orb::PlacementStrategy::SPREAD,
                     orb::PlacementStrategy::STRICT_PACK, orb::PlacementStrategy::STRICT_SPREAD};
  for (int i = 0; i < 50; ++i) {
    auto pg = Create(*(strategies.begin() + i % 4), 2, 0.5);
    REQUIRE(pg.Wait(30));
    orb::RemovePlacementGroup(pg.GetID());
  }
  CHECK(ResourcesSettleTo(6));
}

TEST_CASE("bad input: empty bundles, negative amounts, an index past the last bundle", "[pg][errors]") {
  Cluster();
  CHECK_THROWS_WITH(orb::CreatePlacementGroup({"x", {}, orb::PlacementStrategy::PACK}), Catch::Contains("at least one"));
  CHECK_THROWS_WITH(orb::CreatePlacementGroup({"x", {{}}, orb::PlacementStrategy::PACK}), Catch::Contains("no resources"));
  CHECK_THROWS_WITH(orb::CreatePlacementGroup({"x", {{{"CPU", -1}}}, orb::PlacementStrategy::PACK}),
                    Catch::Contains("positive"));
  auto pg = Create(orb::PlacementStrategy::PACK, 2, 0.5);
  CHECK_THROWS_WITH(orb::Task(WhereAmI).SetPlacementGroup(pg, 2), Catch::Contains("out of range"));
  CHECK_THROWS_AS(orb::Task(WhereAmI).SetPlacementGroup(orb::PlacementGroup(), 0), orb::Error);
  CHECK_THROWS_AS(orb::RemovePlacementGroup("not-an-id"), orb::Error);
  orb::RemovePlacementGroup(pg.GetID());
}

TEST_CASE("groups are found by name and ID, listed, and report their state; names are unique", "[pg][api]") {
  Cluster();
  // Bundles as Ray programs give them: a vector of unordered_map.
  std::vector<std::unordered_map<std::string, double>> bundles{{{"CPU", 0.5}}};
  orb::PlacementGroupCreationOptions options{"lookup_me", bundles, orb::PlacementStrategy::PACK};
  auto pg = orb::CreatePlacementGroup(options);
  REQUIRE(pg.Wait(30));
  CHECK(pg.GetState() == orb::PlacementGroupState::CREATED);
  CHECK_THROWS_WITH(orb::CreatePlacementGroup(options), Catch::Contains("already exists"));
  auto by_name = orb::GetPlacementGroup("lookup_me");
  CHECK(by_name.GetID() == pg.GetID());
  CHECK(by_name.GetBundles().size() == 1);
  CHECK(by_name.GetBundles()[0].at("CPU") == 0.5);
  CHECK(by_name.GetStrategy() == orb::PlacementStrategy::PACK);
  auto by_id = orb::GetPlacementGroupById(pg.GetID());
  CHECK(by_id.GetName() == "lookup_me");
  bool listed = false;
  for (const auto& g : orb::GetAllPlacementGroups()) listed = listed || g.GetID() == pg.GetID();
  CHECK(listed);
  CHECK(orb::GetPlacementGroup("no_such_group").Empty());
  CHECK(orb::GetPlacementGroupById(std::string(32, 'a')).Empty());
  orb::RemovePlacementGroup(pg.GetID());
  CHECK(orb::GetPlacementGroupById(pg.GetID()).GetState() == orb::PlacementGroupState::REMOVED);
  CHECK(pg.GetState() == orb::PlacementGroupState::REMOVED);
  CHECK(orb::GetPlacementGroup("lookup_me").Empty());  // removed: the name is free again
  orb::RemovePlacementGroup(pg.GetID());               // removing twice does nothing
  auto again = orb::CreatePlacementGroup(options);
  CHECK(again.Wait(30));
  orb::RemovePlacementGroup(again.GetID());
}

// Last: it leaves the cluster with a fourth node.
TEST_CASE("a node that dies takes its bundles; the group is placed again elsewhere", "[pg][faults]") {
  auto& c = Cluster();
  REQUIRE(ResourcesSettleTo(6));
  // Two more nodes offering zone_x, started here so that their pids are known.
  std::map<std::string, pid_t> pid_by_address;
  for (int i = 0; i < 2; ++i) {
    std::string out = orb::testing::Run(c.orb_ + " start --address " + c.address_ +
                                        " --num-cpus 2 --resources '{\"zone_x\": 1}' --object-store-memory 67108864");
    auto raylet = out.find("raylet ") + 7;
    pid_by_address[out.substr(raylet, out.find(' ', raylet) - raylet)] = std::stoi(out.substr(out.find("(pid ") + 5));
  }
  REQUIRE(orb::testing::WaitFor([] { return TotalAvailable("zone_x") == 2; }, std::chrono::seconds(15)));
  auto pg = orb::CreatePlacementGroup(
      {"survivor", {{{"CPU", 1}}, {{"CPU", 1}, {"zone_x", 1}}}, orb::PlacementStrategy::SPREAD});
  REQUIRE(pg.Wait(30));
  auto before = NodesOfBundles(pg);
  std::string victim_address;
  for (const auto& n : orb::Nodes()) {
    if (n.node_id == before[1]) victim_address = n.address;
  }
  REQUIRE(pid_by_address.count(victim_address));
  REQUIRE(::kill(pid_by_address[victim_address], SIGKILL) == 0);
  // Declared dead, its bundle is reserved again on the other zone_x node.
  std::string after;
  CHECK(orb::testing::WaitFor(
      [&] {
        try {
          after = *orb::Task(WhereAmI).SetPlacementGroup(pg, 1).Remote().Get(5000);
          return after != before[1];
        } catch (const orb::Error&) {
          return false;
        }
      },
      std::chrono::seconds(40)));
  CHECK(after != before[1]);
  CHECK(pg.Wait(30));
  CHECK(*orb::Task(WhereAmI).SetPlacementGroup(pg, 0).Remote().Get(30000) == before[0]);
  orb::RemovePlacementGroup(pg.GetID());
}


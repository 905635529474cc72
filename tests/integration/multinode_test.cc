// Two nodes on one machine, started with the CLI as a user would: placement by custom
// resource, label and node affinity; spread; spillback when the local node is full.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_cluster.h"

namespace {

std::string WhereAmI(int sleep_ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
  return orb::GetRuntimeContext().GetNodeId();
}
ORB_REMOTE(WhereAmI);

using orb::testing::Run;
using orb::testing::RunAnyway;

// Waits until the driver's raylet can place work on `node` (its view has the node).
bool WaitUntilPlaceable(const std::string& node) {
  return orb::testing::WaitFor(
      [&] {
        try {
          auto where = orb::Task(WhereAmI).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{node}).Remote(0);
          return *where.Get(10000) == node;
        } catch (const orb::InfeasibleError&) {
          return false;
        }
      },
      std::chrono::seconds(15));
}

// A head node with 2 CPUs and a second node with 2 CPUs, zone_b resources and a label.
class TwoNodeCluster : public orb::testing::CliCluster {
 public:
  TwoNodeCluster()
      : CliCluster("multinode", "--num-cpus 2 --object-store-memory 268435456 --labels '{\"zone\": \"a\"}'",
                   {"--num-cpus 2 --object-store-memory 268435456 --resources '{\"zone_b\": 2}' "
                    "--labels '{\"zone\": \"b\"}'"}) {
    for (const auto& n : orb::Nodes()) {
      if (n.resources_total.count("zone_b")) {
        second_ = n.node_id;
      } else {
        head_ = n.node_id;
      }
    }
    // Raylets learn of each other by gossip: wait until the head's raylet can place
    // work on the second node.
    REQUIRE(WaitUntilPlaceable(second_));
  }
  std::string head_, second_;
};

TwoNodeCluster& Cluster() {
  static TwoNodeCluster cluster;
  return cluster;
}

}  // namespace

TEST_CASE("tasks go where their custom resources are", "[multinode]") {
  auto& c = Cluster();
  for (int i = 0; i < 3; ++i) {
    CHECK(*orb::Task(WhereAmI).SetResources({{"CPU", 1}, {"zone_b", 1}}).Remote(0).Get(30000) == c.second_);
  }
}

TEST_CASE("label selectors place tasks; a selector that cannot match is infeasible", "[multinode]") {
  auto& c = Cluster();
  CHECK(*orb::Task(WhereAmI).SetLabelSelector("zone in (b)").Remote(0).Get(30000) == c.second_);
  CHECK(*orb::Task(WhereAmI).SetLabelSelector("zone != b").Remote(0).Get(30000) == c.head_);
  CHECK_THROWS_AS(orb::Task(WhereAmI).SetLabelSelector("zone = c").Remote(0).Get(30000), orb::InfeasibleError);
  CHECK_THROWS_AS(orb::Task(WhereAmI).SetLabelSelector("zone in (b").Remote(0), orb::Error);
}

TEST_CASE("node affinity runs on the named node; an unknown node is infeasible at once", "[multinode]") {
  auto& c = Cluster();
  CHECK(*orb::Task(WhereAmI).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{c.second_}).Remote(0).Get(30000) ==
        c.second_);
  CHECK(*orb::Task(WhereAmI).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{c.head_}).Remote(0).Get(30000) ==
        c.head_);
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(orb::Task(WhereAmI)
                      .SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{std::string(32, 'a')})
                      .Remote(0)
                      .Get(30000),
                  orb::InfeasibleError);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  CHECK_THROWS_AS(orb::Task(WhereAmI).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{"not-hex"}).Remote(0),
                  orb::Error);
  // A node that can never hold the task: infeasible (after the grace period), saying why.
  try {
    orb::Task(WhereAmI)
        .SetResource("CPU", 64)
        .SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{c.second_})
        .Remote(0)
        .Get(60000);
    FAIL("a task pinned to a node without the CPUs ran");
  } catch (const orb::InfeasibleError& e) {
    CHECK_THAT(e.what(), Catch::Contains("does not have"));
  }
}

TEST_CASE("slow tasks spread over both nodes; spread strategy alternates", "[multinode]") {
  Cluster();
  std::vector<orb::ObjectRef<std::string>> slow;
  for (int i = 0; i < 4; ++i) slow.push_back(orb::Task(WhereAmI).Remote(800));
  std::set<std::string> used;
  for (const auto& n : orb::Get(slow, 60000)) used.insert(*n);
  CHECK(used.size() == 2);
  std::vector<orb::ObjectRef<std::string>> spread;
  for (int i = 0; i < 4; ++i) spread.push_back(orb::Task(WhereAmI).SetSchedulingStrategy(orb::SpreadSchedulingStrategy{}).Remote(300));
  used.clear();
  for (const auto& n : orb::Get(spread, 60000)) used.insert(*n);
  CHECK(used.size() == 2);
}

TEST_CASE("tasks too big for the free local CPUs spill back to the other node", "[multinode]") {
  auto& c = Cluster();
  // Start from an idle cluster, as every node reports it.
  REQUIRE(orb::testing::WaitFor(
      [] {
        for (const auto& n : orb::Nodes()) {
          auto free = n.resources_available.find("CPU");  // absent when none is free
          if (free == n.resources_available.end() || free->second != n.resources_total.at("CPU")) return false;
        }
        return true;
      },
      std::chrono::seconds(10)));
  std::vector<orb::ObjectRef<std::string>> refs;
  for (int i = 0; i < 2; ++i) refs.push_back(orb::Task(WhereAmI).SetResource("CPU", 2).Remote(800));
  std::set<std::string> used;
  for (const auto& n : orb::Get(refs, 60000)) {
    used.insert(*n);
    UNSCOPED_INFO("ran on " << *n);
  }
  CHECK(used == std::set<std::string>{c.head_, c.second_});
}

namespace {
std::vector<int64_t> Produce(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i * 3;
  return v;
}
int64_t Checksum(std::vector<int64_t> v) {
  int64_t s = 0;
  for (auto x : v) s += x;
  return s;
}
ORB_REMOTE(Produce, Checksum);
}  // namespace

TEST_CASE("a 64 MiB object made on one node is read on another, both ways", "[multinode][objects]") {
  auto& c = Cluster();
  const int64_t n = 8 << 20;  // 8 Mi int64 values: 64 MiB of payload
  const int64_t expected = 3 * (n * (n - 1) / 2);
  auto on_second = orb::NodeAffinitySchedulingStrategy{c.second_};
  auto on_head = orb::NodeAffinitySchedulingStrategy{c.head_};
  // Made by a task on the second node, read by the driver on the head node.
  auto produced = orb::Task(Produce).SetSchedulingStrategy(on_second).Remote(n);
  auto value = orb::Get(produced, 60000);
  REQUIRE(value->size() == static_cast<size_t>(n));
  CHECK((*value)[n - 1] == 3 * (n - 1));
  // Read by tasks on both nodes; the second node has it, the head pulls once more.
  CHECK(*orb::Task(Checksum).SetSchedulingStrategy(on_head).Remote(produced).Get(60000) == expected);
  CHECK(*orb::Task(Checksum).SetSchedulingStrategy(on_second).Remote(produced).Get(60000) == expected);
  // Put by the driver on the head node, read by two tasks on the second node at once.
  auto put = orb::Put(*value);
  auto r1 = orb::Task(Checksum).SetSchedulingStrategy(on_second).Remote(put);
  auto r2 = orb::Task(Checksum).SetSchedulingStrategy(on_second).Remote(put);
  CHECK(*r1.Get(60000) == expected);
  CHECK(*r2.Get(60000) == expected);
}

TEST_CASE("the GCS killed with SIGKILL and restarted: nodes stay members and work goes on", "[multinode][faults]") {
  auto& c = Cluster();
  std::filesystem::path session = std::filesystem::canonical(c.temp_ / "session_latest");
  pid_t gcs = std::stoi(Run("cat " + (session / "gcs.pid").string()));
  std::string port = c.address_.substr(c.address_.rfind(':') + 1);
  // A placement group first: from here on this driver's GCS calls go over the GCS's call stream.
  auto before = orb::CreatePlacementGroup({"before-kill", {{{"CPU", 0.01}}}, orb::PlacementStrategy::PACK});
  REQUIRE(before.Wait(30));
  orb::RemovePlacementGroup(before.GetID());
  REQUIRE(::kill(gcs, SIGKILL) == 0);
  // Restart it as `orb start --head` did: same port, token and RocksDB directory.
  std::string restarted = Run("sh -c '" + std::string(std::getenv("ORB_BIN_DIR")) + "/gcs_server --port " + port +
                              " --token-file " + (session / "token").string() + " --storage-dir " +
                              (session / "storage").string() + " > " + (session / "logs" / "gcs-restarted.out").string() +
                              " 2>&1 & echo $!'");
  Run("sh -c 'echo " + std::to_string(std::stoi(restarted)) + " > " + (session / "gcs.pid").string() + "'");
  auto alive = [] {
    try {
      int n = 0;
      for (const auto& node : orb::Nodes()) n += node.alive;
      return n;
    } catch (const orb::Error&) {
      return -1;  // the GCS is still starting
    }
  };
  REQUIRE(orb::testing::WaitFor([&] { return alive() >= 2; }, std::chrono::seconds(20)));
  // Well past probe interval + suspicion timeout (about 4 s), the nodes are still alive:
  // their gossip reached the new GCS, which keeps the same cluster ID in its storage.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  bool stayed = true;
  while (stayed && std::chrono::steady_clock::now() < until) {
    stayed = alive() >= 2;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  CHECK(stayed);
  // The stream to the dead GCS broke: these go over gRPC, then over the new GCS's stream.
  for (int i = 0; i < 3; ++i) {
    auto pg = orb::CreatePlacementGroup({"after-kill-" + std::to_string(i), {{{"CPU", 0.01}}}, orb::PlacementStrategy::PACK});
    CHECK(pg.Wait(30));
    orb::RemovePlacementGroup(pg.GetID());
    if (i == 1) std::this_thread::sleep_for(std::chrono::seconds(6));  // past the port look-up's back-off
  }
  CHECK(*orb::Task(WhereAmI).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{c.second_}).Remote(0).Get(30000) ==
        c.second_);
  CHECK(*orb::Task(WhereAmI).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{c.head_}).Remote(0).Get(30000) ==
        c.head_);
}

namespace {
int SlowDouble(int x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  return 2 * x;
}
ORB_REMOTE(SlowDouble);
}  // namespace

namespace {
// A third node started here, so that its pid is known for fault injection.
struct ExtraNode {
  pid_t pid = 0;
  std::string id;
};
int AliveNodes() {
  int n = 0;
  for (const auto& node : orb::Nodes()) n += node.alive;
  return n;
}
std::set<std::string> AliveNodeIds() {
  std::set<std::string> ids;
  for (const auto& node : orb::Nodes()) {
    if (node.alive) ids.insert(node.node_id);
  }
  return ids;
}
ExtraNode StartExtraNode(TwoNodeCluster& c, const std::string& name) {
  std::set<std::string> before = AliveNodeIds();
  std::string token = (c.temp_ / "session_latest" / "token").string();
  std::string pid_text = Run("sh -c '" + std::string(std::getenv("ORB_BIN_DIR")) + "/raylet --gcs-address " +
                             c.address_ + " --num-cpus 2 --object-store-memory 134217728 --token-file " + token +
                             " > " + (c.temp_ / (name + ".out")).string() + " 2>&1 & echo $!'");
  ExtraNode node;
  node.pid = std::stoi(pid_text);
  REQUIRE(orb::testing::WaitFor([&] { return AliveNodeIds().size() == before.size() + 1; }, std::chrono::seconds(10)));
  for (const auto& id : AliveNodeIds()) {
    if (!before.count(id)) node.id = id;
  }
  REQUIRE(WaitUntilPlaceable(node.id));
  return node;
}
}  // namespace

TEST_CASE("instant SPREAD tasks reach every node of a 4-node cluster, every time", "[multinode]") {
  auto& c = Cluster();
  ExtraNode third = StartExtraNode(c, "spread-3");
  ExtraNode fourth = StartExtraNode(c, "spread-4");
  std::set<std::string> all{c.head_, c.second_, third.id, fourth.id};
  for (int round = 0; round < 5; ++round) {
    std::vector<orb::ObjectRef<std::string>> refs;
    for (int i = 0; i < 40; ++i) {
      refs.push_back(orb::Task(WhereAmI).SetSchedulingStrategy(orb::SpreadSchedulingStrategy{}).Remote(0));
    }
    std::map<std::string, int> per_node;
    for (const auto& n : orb::Get(refs, 60000)) per_node[*n]++;
    std::set<std::string> used;
    for (const auto& [node, count] : per_node) {
      used.insert(node);
      UNSCOPED_INFO("round " << round << ": " << count << " task(s) on " << node.substr(0, 8));
    }
    CHECK(used == all);
  }
  for (const ExtraNode& node : {third, fourth}) ::kill(node.pid, SIGTERM);
  CHECK(orb::testing::WaitFor([] { return AliveNodes() == 2; }, std::chrono::seconds(20)));
}

TEST_CASE("a raylet killed with SIGKILL mid-batch costs no result; the GCS declares it dead", "[multinode][faults]") {
  auto& c = Cluster();
  ExtraNode victim = StartExtraNode(c, "victim");
  auto alive = AliveNodes;

  std::vector<orb::ObjectRef<int>> refs;
  for (int i = 0; i < 12; ++i) {
    refs.push_back(orb::Task(SlowDouble).SetSchedulingStrategy(orb::SpreadSchedulingStrategy{}).SetMaxRetries(3).Remote(i));
  }
  // Fault injection: the kill lands while the first tasks of the batch run on every node.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(::kill(victim.pid, SIGKILL) == 0);
  auto values = orb::Get(refs, 90000);
  for (int i = 0; i < 12; ++i) CHECK(*values[i] == 2 * i);
  // Probes fail, the suspicion is not refuted: dead within the default timeouts (< 10 s).
  auto killed = std::chrono::steady_clock::now();
  CHECK(orb::testing::WaitFor([&] { return alive() == 2; }, std::chrono::seconds(20)));
  CHECK(std::chrono::steady_clock::now() - killed < std::chrono::seconds(10));
}

namespace {
int SleepOnZoneB(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}
ORB_REMOTE(SleepOnZoneB);

// Owns a task that holds a lease on the second node (zone_b), writes its own pid to
// `pid_file`, and waits for that task.
int OwnerOfASleeper(std::string pid_file) {
  auto sleeper = orb::Task(SleepOnZoneB).SetResources({{"CPU", 1}, {"zone_b", 1}}).SetMaxRetries(0).Remote(60000);
  std::ofstream(pid_file) << ::getpid();
  return *sleeper.Get(120000);
}
ORB_REMOTE(OwnerOfASleeper);

double ZoneBAvailable() {
  for (const auto& n : orb::Nodes()) {
    if (!n.resources_total.count("zone_b")) continue;
    auto free = n.resources_available.find("zone_b");  // absent when none is free
    return free == n.resources_available.end() ? 0 : free->second;
  }
  return -1;
}
}  // namespace

TEST_CASE("a worker killed with SIGKILL gives back the leases it held on another node", "[multinode][faults]") {
  auto& c = Cluster();
  REQUIRE(orb::testing::WaitFor([] { return ZoneBAvailable() == 2; }, std::chrono::seconds(30)));
  std::string pid_file = (c.temp_ / "owner.pid").string();
  std::filesystem::remove(pid_file);
  auto owner = orb::Task(OwnerOfASleeper)
                   .SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{c.head_})
                   .SetMaxRetries(0)
                   .Remote(pid_file);
  // The sleeper runs on the second node, under a lease its owner holds.
  REQUIRE(orb::testing::WaitFor([] { return ZoneBAvailable() == 1; }, std::chrono::seconds(30)));
  pid_t pid = 0;
  std::ifstream(pid_file) >> pid;
  REQUIRE(pid > 0);
  REQUIRE(::kill(pid, SIGKILL) == 0);
  CHECK_THROWS_AS(owner.Get(30000), orb::WorkerCrashedError);
  // Nobody is left to return that lease: the second node reclaims it when it hears of
  // the owner's death (stopping the sleeper, whose result nobody can receive), long
  // before the sleeper would have finished.
  CHECK(orb::testing::WaitFor([] { return ZoneBAvailable() == 2; }, std::chrono::seconds(20)));
}

TEST_CASE("a Get pulling from a frozen node fails once the node is declared dead, not when it wakes",
          "[multinode][faults][objects]") {
  auto& c = Cluster();
  ExtraNode frozen = StartExtraNode(c, "frozen");
  const int64_t n = 4 << 20;  // 32 MiB: several chunks
  auto produced = orb::Task(Produce).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{frozen.id}).Remote(n);
  REQUIRE(orb::Wait(std::vector<orb::ObjectRef<std::vector<int64_t>>>{produced}, 1, 60000).ready.size() == 1);
  REQUIRE(::kill(frozen.pid, SIGSTOP) == 0);
  auto stopped = std::chrono::steady_clock::now();
  std::string error;
  try {
    orb::Get(produced, 120000);
  } catch (const orb::ObjectLostError& e) {
    error = e.what();
  }
  auto waited = std::chrono::steady_clock::now() - stopped;
  ::kill(frozen.pid, SIGKILL);
  ::kill(frozen.pid, SIGCONT);
  INFO(error);
  CHECK(error.find("declared dead") != std::string::npos);
  // Probe interval + suspicion timeout is about 4 s; the sockets' own timeout is 60 s.
  CHECK(waited < std::chrono::seconds(20));
  CHECK(orb::testing::WaitFor([] { return AliveNodes() == 2; }, std::chrono::seconds(20)));
}

namespace {
// 8 MiB blocks: each lives in the object store of the node that made it.
std::vector<int64_t> Block(int64_t seed) {
  std::vector<int64_t> v(1 << 20);
  for (size_t i = 0; i < v.size(); ++i) v[i] = seed + static_cast<int64_t>(i);
  return v;
}
std::vector<int64_t> AddOne(std::vector<int64_t> v) {
  for (auto& x : v) ++x;
  return v;
}
class BlockMaker {
 public:
  static BlockMaker* Create() { return new BlockMaker(); }
  std::vector<int64_t> Make(int64_t seed) { return Block(seed); }
};
ORB_REMOTE(Block, AddOne, BlockMaker::Create, &BlockMaker::Make);
}  // namespace

TEST_CASE("results lost with their node are rebuilt from lineage, through a chain of tasks", "[multinode][faults][objects]") {
  auto& c = Cluster();
  ExtraNode victim = StartExtraNode(c, "lineage");
  // Soft affinity, and no CPU asked, so that the victim always has room for them now
  // and they can run elsewhere once it is gone.
  auto there = orb::NodeAffinitySchedulingStrategy{victim.id, /*soft=*/true};
  // Only the last result is kept by the program: the intermediate ones are temporaries,
  // known to the driver only as the lineage of the last.
  auto last = orb::Task(AddOne).SetSchedulingStrategy(there).SetResource("CPU", 0).Remote(
      orb::Task(AddOne).SetSchedulingStrategy(there).SetResource("CPU", 0).Remote(
          orb::Task(Block).SetSchedulingStrategy(there).SetResource("CPU", 0).Remote(5)));
  auto fragile = orb::Task(AddOne).SetSchedulingStrategy(there).SetResource("CPU", 0).SetMaxRetries(0).Remote(
      orb::Task(Block).SetSchedulingStrategy(there).SetResource("CPU", 0).SetMaxRetries(0).Remote(9));
  auto maker = orb::Actor(BlockMaker::Create).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{victim.id}).Remote();
  auto made = maker.Task(&BlockMaker::Make).Remote(3);
  using Refs = std::vector<orb::ObjectRef<std::vector<int64_t>>>;
  REQUIRE(orb::Wait(Refs{last, fragile, made}, 3, 60000).ready.size() == 3);
  // Every copy is on the victim, as `orb list objects` says.
  auto objects = nlohmann::json::parse(Run(c.orb_ + " list objects --format json --address " + c.address_));
  int on_victim = 0;
  for (const auto& o : objects) {
    if (o["object_id"] != last.ID() && o["object_id"] != fragile.ID() && o["object_id"] != made.ID()) continue;
    REQUIRE(o["copies"].size() == 1);
    CHECK(o["copies"][0]["node_id"] == victim.id);
    on_victim++;
  }
  REQUIRE(on_victim == 3);
  REQUIRE(::kill(victim.pid, SIGKILL) == 0);

  // Every copy was on the dead node: the three tasks run again elsewhere.
  auto value = orb::Get(last, 120000);
  REQUIRE(value->size() == (1u << 20));
  CHECK((*value)[0] == 7);
  CHECK((*value)[(1 << 20) - 1] == 7 + (1 << 20) - 1);
  // Without retries, or made by an actor call, the loss is final and says why.
  std::string fragile_error, actor_error;
  try {
    orb::Get(fragile, 60000);
  } catch (const orb::ObjectLostError& e) {
    fragile_error = e.what();
  }
  try {
    orb::Get(made, 60000);
  } catch (const orb::ObjectLostError& e) {
    actor_error = e.what();
  }
  INFO(fragile_error);
  INFO(actor_error);
  CHECK(fragile_error.find("was lost") != std::string::npos);
  CHECK(fragile_error.find("max_retries=0") != std::string::npos);
  CHECK(actor_error.find("actor method 'BlockMaker::Make'") != std::string::npos);
  CHECK(orb::testing::WaitFor([] { return AliveNodes() == 2; }, std::chrono::seconds(20)));
}

namespace {
std::vector<uint8_t> Bytes(int64_t n, int seed) { return std::vector<uint8_t>(n, static_cast<uint8_t>(seed)); }
// A task's result that holds a ref it was given.
orb::ObjectRef<std::vector<uint8_t>> FirstOf(std::vector<orb::ObjectRef<std::vector<uint8_t>>> refs) { return refs.at(0); }
struct Holder {
  std::string tag;
  std::vector<orb::ObjectRef<std::vector<uint8_t>>> refs;
  MSGPACK_DEFINE(tag, refs);
};
// Keeps refs in its state, inside a struct.
class RefKeeper {
 public:
  static RefKeeper* Create() { return new RefKeeper(); }
  bool Keep(Holder h) {
    held_ = std::move(h);
    return true;
  }
  int64_t Sum() {
    auto value = orb::Get(held_.refs.at(0), 60000);
    int64_t s = 0;
    for (auto b : *value) s += b;
    return s;
  }
  bool Drop() {
    held_ = Holder();
    return true;
  }
  Holder held_;
};
ORB_REMOTE(Bytes, FirstOf, RefKeeper::Create, &RefKeeper::Keep, &RefKeeper::Sum, &RefKeeper::Drop);

// Bytes in use in each node's store, and whether `id` is anywhere, as `orb memory` says.
std::map<std::string, int64_t> StoreUse(TwoNodeCluster& c) {
  auto memory = nlohmann::json::parse(Run(c.orb_ + " memory --format json --address " + c.address_));
  std::map<std::string, int64_t> used;
  for (const auto& n : memory["nodes"]) used[n["node_id"]] = n["used_bytes"];
  return used;
}
bool Listed(TwoNodeCluster& c, const std::string& id) {
  return Run(c.orb_ + " list objects --format json --address " + c.address_).find(id) != std::string::npos;
}
}  // namespace

TEST_CASE("refs in a struct, a vector, an actor's state and a task's result keep an object on every node, "
          "and it is freed everywhere after the last holder lets go",
          "[multinode][objects][refs]") {
  auto& c = Cluster();
  auto before = StoreUse(c);
  const int64_t n = 32 << 20;
  auto keeper = orb::Actor(RefKeeper::Create).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{c.second_}).Remote();
  std::string id;
  {
    // Made on the second node (its primary there), read here (a copy on the head).
    auto made = orb::Task(Bytes).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{c.second_}).Remote(n, 3);
    id = made.ID();
    REQUIRE(orb::Get(made, 60000)->size() == static_cast<size_t>(n));
    REQUIRE(*keeper.Task(&RefKeeper::Keep).Remote(Holder{"kept", {made}}).Get(60000));
    auto echoed = orb::Task(FirstOf).Remote(std::vector<orb::ObjectRef<std::vector<uint8_t>>>{made});
    auto inner = *orb::Get(echoed, 60000);
    CHECK(inner.ID() == id);
    CHECK(Listed(c, id));
  }
  // The driver let go of every ref; the actor still holds one: the object lives, and
  // `orb list objects` says who holds it.
  auto listed = nlohmann::json::parse(Run(c.orb_ + " list objects --format json --address " + c.address_));
  bool found = false;
  for (const auto& o : listed) {
    if (o["object_id"] != id) continue;
    found = true;
    CHECK(o["references"]["borrower"].get<int>() >= 1);
    CHECK(o["copies"].size() >= 1);
  }
  CHECK(found);
  CHECK(*keeper.Task(&RefKeeper::Sum).Remote().Get(60000) == 3 * n);
  REQUIRE(*keeper.Task(&RefKeeper::Drop).Remote().Get(60000));
  // Gone from the owner's table and from both nodes' stores (the primary and the copy).
  CHECK(orb::testing::WaitFor([&] { return !Listed(c, id); }, std::chrono::seconds(20)));
  CHECK(orb::testing::WaitFor(
      [&] {
        auto now = StoreUse(c);
        return now[c.head_] <= before[c.head_] && now[c.second_] <= before[c.second_];
      },
      std::chrono::seconds(20)));
}

namespace {
// Says it started (a file), then runs until told to stop (another file), at most 30 s.
std::string RunUntilReleased(std::string started, std::string release) {
  std::ofstream(started).put('x');
  orb::testing::WaitFor([&] { return std::filesystem::exists(release); }, std::chrono::seconds(30));
  return orb::GetRuntimeContext().GetNodeId();
}
ORB_REMOTE(RunUntilReleased);
}  // namespace

TEST_CASE("a drained node hands its objects to other nodes: none is lost when it is then killed",
          "[multinode][objects]") {
  auto& c = Cluster();
  ExtraNode leaving = StartExtraNode(c, "drain");
  // Results made on the leaving node, with no retries: lineage cannot bring them back,
  // only the move can.
  auto there = orb::NodeAffinitySchedulingStrategy{leaving.id};
  std::vector<orb::ObjectRef<std::vector<uint8_t>>> refs;
  for (int i = 0; i < 6; ++i) {
    refs.push_back(orb::Task(Bytes).SetSchedulingStrategy(there).SetResource("CPU", 0).SetMaxRetries(0).Remote(
        int64_t{1} << 20, i + 1));
  }
  REQUIRE(orb::Wait(refs, 6, 60000).ready.size() == 6);
  // One was read here first: the head's copy of it becomes the primary.
  CHECK((*orb::Get(refs[0], 30000))[0] == 1);

  // The owner gives its idle leases back within moments; until then the node is busy.
  std::string drained;
  REQUIRE(orb::testing::WaitFor(
      [&] {
        drained = RunAnyway(c.orb_ + " drain-node " + leaving.id.substr(0, 12) + " --address " + c.address_ + " 2>&1");
        return drained.find("is drained") != std::string::npos;
      },
      std::chrono::seconds(15), std::chrono::milliseconds(300)));
  INFO(drained);
  CHECK(drained.find("is drained: 6 object(s)") != std::string::npos);
  // Drained, it takes no new work: a task that may run anywhere goes elsewhere.
  auto where = orb::Task(WhereAmI).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{leaving.id, true}).Remote(0);
  CHECK(*where.Get(30000) != leaving.id);
  REQUIRE(::kill(leaving.pid, SIGKILL) == 0);
  REQUIRE(orb::testing::WaitFor([] { return AliveNodes() == 2; }, std::chrono::seconds(20)));

  for (int i = 0; i < 6; ++i) {
    auto value = orb::Get(refs[i], 60000);
    REQUIRE(value->size() == (1u << 20));
    CHECK((*value)[0] == i + 1);
    CHECK((*value)[(1 << 20) - 1] == i + 1);
  }
  // A node that is not idle refuses, saying why, and keeps working.
  std::string started = (c.temp_ / "drain-busy-started").string(), release = (c.temp_ / "drain-busy-release").string();
  std::filesystem::remove(started);
  std::filesystem::remove(release);
  auto busy = orb::Task(RunUntilReleased).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{c.second_}).Remote(
      started, release);
  REQUIRE(orb::testing::WaitFor([&] { return std::filesystem::exists(started); }, std::chrono::seconds(20)));
  std::string refused = RunAnyway(c.orb_ + " drain-node " + c.second_ + " --address " + c.address_ + " 2>&1");
  std::ofstream(release).put('x');
  INFO(refused);
  CHECK(refused.find("cannot leave: ") != std::string::npos);
  CHECK(refused.find(" leases are running") != std::string::npos);
  CHECK(*busy.Get(30000) == c.second_);
  CHECK(*orb::Task(WhereAmI).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{c.second_}).Remote(0).Get(30000) ==
        c.second_);
}

namespace {
// An actor that says where it runs.
class Locator {
 public:
  static Locator* Create() { return new Locator(); }
  std::string Node() { return orb::GetRuntimeContext().GetNodeId(); }
};
ORB_REMOTE(Locator::Create, &Locator::Node);

int NumRestarts(TwoNodeCluster& c, const std::string& actor_id) {
  auto actors = nlohmann::json::parse(Run(c.orb_ + " list actors --format json --address " + c.address_));
  for (const auto& a : actors) {
    if (a["actor_id"] == actor_id) return a["num_restarts"].get<int>();
  }
  return -1;
}
}  // namespace

TEST_CASE("a drained node's actors restart elsewhere by intent; one that may not restart keeps its node",
          "[multinode][actors]") {
  auto& c = Cluster();
  ExtraNode leaving = StartExtraNode(c, "drain-actors");
  auto mover = orb::Actor(Locator::Create)
                   .SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{leaving.id, /*soft=*/true})
                   .SetResource("CPU", 0)
                   .SetMaxRestarts(1)
                   .Remote();
  REQUIRE(*mover.Task(&Locator::Node).Remote().Get(30000) == leaving.id);
  std::string drained;
  REQUIRE(orb::testing::WaitFor(
      [&] {
        drained = RunAnyway(c.orb_ + " drain-node " + leaving.id + " --address " + c.address_ + " 2>&1");
        return drained.find("is drained") != std::string::npos;
      },
      std::chrono::seconds(15), std::chrono::milliseconds(300)));
  // It runs on another node now, and the move did not spend its one restart.
  std::string now;
  REQUIRE(orb::testing::WaitFor(
      [&] {
        try {
          now = *mover.Task(&Locator::Node).Remote().Get(10000);
        } catch (const orb::Error&) {
          now.clear();
        }
        return !now.empty() && now != leaving.id;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(200)));
  CHECK(NumRestarts(c, mover.ID()) == 0);
  REQUIRE(::kill(leaving.pid, SIGKILL) == 0);
  CHECK(*mover.Task(&Locator::Node).Remote().Get(30000) == now);

  // max_restarts=0: its state cannot be rebuilt, so the node it is on refuses to leave.
  auto pinned = orb::Actor(Locator::Create)
                    .SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{c.second_})
                    .SetResource("CPU", 0)
                    .Remote();
  REQUIRE(*pinned.Task(&Locator::Node).Remote().Get(30000) == c.second_);
  std::string refused;
  REQUIRE(orb::testing::WaitFor(
      [&] {
        refused = RunAnyway(c.orb_ + " drain-node " + c.second_ + " --address " + c.address_ + " 2>&1");
        return refused.find("leases are running") == std::string::npos;  // the driver's idle leases went back
      },
      std::chrono::seconds(15), std::chrono::milliseconds(300)));
  INFO(refused);
  CHECK(refused.find(" actor(s) cannot move: ") != std::string::npos);  // earlier cases may have left actors there
  CHECK(refused.find("max_restarts=0") != std::string::npos);
  CHECK(*pinned.Task(&Locator::Node).Remote().Get(30000) == c.second_);
  CHECK(*orb::Task(WhereAmI).SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{c.second_}).Remote(0).Get(30000) ==
        c.second_);
  pinned.Kill();
}

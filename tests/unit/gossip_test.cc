// Gossip over the simulated network: keys order as SWIM needs, changes reach every
// member, a cut-off node is suspected and declared dead by the GCS alone and never
// returns, a live node refutes a suspicion, and bad messages are dropped and counted.
#include <catch2/catch.hpp>

#include "gossip/sim_network.h"

using namespace orb::gossip;
namespace rpc = orb::rpc;

namespace {

GossipOptions TestOptions() {
  GossipOptions o;
  o.cluster_id = "test-cluster";
  o.suspicion_timeout = std::chrono::milliseconds(1000);
  return o;
}

// True when every live raylet's view holds `member`'s entry at `version` or later.
bool EveryoneHas(SimCluster& cluster, uint32_t member, uint64_t version) {
  uint32_t index = cluster.IndexOf(member);
  for (uint32_t m = 0; m < cluster.size(); ++m) {
    const MemberSlot* slot = cluster.member(m).view().Get(index);
    if (!slot || KeyVersion(slot->key) < version) return false;
  }
  return true;
}

MemberState StateIn(SimCluster& cluster, uint32_t viewer, uint32_t member) {
  const MemberSlot* slot = cluster.member(viewer).view().Get(cluster.IndexOf(member));
  REQUIRE(slot != nullptr);
  return KeyState(slot->key);
}

void Publish(SimCluster& cluster, uint32_t member, double cpus) {
  rpc::GossipNodeState state = *cluster.member(member).view().Get(cluster.IndexOf(member))->payload;
  (*state.mutable_resources_available())["CPU"] = cpus;
  cluster.member(member).SetLocalState(std::move(state));
}

}  // namespace

TEST_CASE("keys: DEAD beats all, SUSPECT beats ALIVE at one incarnation, a higher incarnation refutes") {
  MemberKey alive = PackKey(3, MemberState::kAlive, 10);
  MemberKey suspect = PackKey(3, MemberState::kSuspect, 2);
  MemberKey refuted = PackKey(4, MemberState::kAlive, 11);
  MemberKey dead = PackKey(1, MemberState::kDead, 0);
  CHECK(IsNewer(suspect, alive));
  CHECK_FALSE(IsNewer(PackKey(3, MemberState::kAlive, 99), suspect));
  CHECK(IsNewer(refuted, suspect));
  CHECK(IsNewer(dead, refuted));
  CHECK_FALSE(IsNewer(PackKey(1000, MemberState::kAlive, 1), dead));
  CHECK(KeyIncarnation(refuted) == 4);
  CHECK(KeyVersion(refuted) == 11);
}

TEST_CASE("new raylets learn the whole cluster from the GCS and a change reaches every member") {
  SimCluster cluster(40, TestOptions(), SimNetworkOptions{}, /*converged=*/false);
  cluster.network().RunFor(3000);
  for (uint32_t m = 0; m < cluster.size(); ++m) CHECK(cluster.member(m).view().known() == 40);

  Publish(cluster, 7, 3);
  uint64_t version = KeyVersion(cluster.member(7).view().Get(cluster.IndexOf(7))->key);
  int64_t start = cluster.network().now();
  while (!EveryoneHas(cluster, 7, version) && cluster.network().now() - start < 5000) cluster.network().RunFor(10);
  REQUIRE(EveryoneHas(cluster, 7, version));
  CHECK(cluster.member(23).view().Get(cluster.IndexOf(7))->payload->resources_available().at("CPU") == 3);
  // Views agree entry for entry, so their roots agree.
  for (uint32_t m = 1; m < cluster.size(); ++m) CHECK(cluster.member(m).view().root() == cluster.gcs().view().root());
}

TEST_CASE("a node cut off is suspected, declared dead by the GCS, and never returns as alive") {
  SimCluster cluster(20, TestOptions(), SimNetworkOptions{}, /*converged=*/true);
  bool told_dead = false;
  cluster.member(5).on_self_dead = [&] { told_dead = true; };
  cluster.network().RunFor(500);
  cluster.network().SetDown(5, true);
  int64_t start = cluster.network().now();
  auto everyone_sees_dead = [&] {
    for (uint32_t m = 0; m < cluster.size(); ++m) {
      if (m != 5 && StateIn(cluster, m, 5) != MemberState::kDead) return false;
    }
    return true;
  };
  while (!everyone_sees_dead() && cluster.network().now() - start < 10000) cluster.network().RunFor(10);
  REQUIRE(everyone_sees_dead());
  // What they keep of it is a tombstone: its address, not its resources.
  for (uint32_t m = 0; m < cluster.size(); ++m) {
    if (m == 5) continue;
    const MemberSlot* slot = cluster.member(m).view().Get(cluster.IndexOf(5));
    CHECK(slot->payload->resources_total().empty());
    CHECK(slot->payload->address() == SimNetwork::AddressOf(5));
  }
  // Probe interval + timeouts + the 1 s suspicion: well under the 10 s limit.
  CHECK(cluster.network().now() - start < 4000);
  CHECK(cluster.gcs().stats().declared_dead == 1);
  for (uint32_t m = 1; m < cluster.size(); ++m) CHECK(cluster.member(m).stats().declared_dead == 0);

  // Reconnected, the old node hears it is dead; nobody takes it back as alive.
  cluster.network().SetDown(5, false);
  cluster.network().RunFor(2000);
  CHECK(told_dead);
  for (uint32_t m = 0; m < cluster.size(); ++m) {
    if (m != 5) CHECK(StateIn(cluster, m, 5) == MemberState::kDead);
  }
}

TEST_CASE("a node suspected while briefly unreachable refutes with a higher incarnation") {
  GossipOptions options = TestOptions();
  options.suspicion_timeout = std::chrono::milliseconds(5000);
  SimCluster cluster(10, options, SimNetworkOptions{}, /*converged=*/true);
  cluster.network().RunFor(500);
  cluster.network().SetDown(3, true);
  int64_t start = cluster.network().now();
  auto anyone_suspects = [&] {
    for (uint32_t m = 0; m < cluster.size(); ++m) {
      if (m != 3 && StateIn(cluster, m, 3) == MemberState::kSuspect) return true;
    }
    return false;
  };
  while (!anyone_suspects() && cluster.network().now() - start < 5000) cluster.network().RunFor(10);
  REQUIRE(anyone_suspects());
  cluster.network().SetDown(3, false);
  cluster.network().RunFor(2000);
  CHECK(cluster.member(3).stats().refutations >= 1);
  for (uint32_t m = 0; m < cluster.size(); ++m) {
    CHECK(StateIn(cluster, m, 3) == MemberState::kAlive);
    CHECK(KeyIncarnation(cluster.member(m).view().Get(cluster.IndexOf(3))->key) >= 2);
  }
  CHECK(cluster.gcs().stats().declared_dead == 0);
}

TEST_CASE("changes still reach every member with 10% of messages lost") {
  SimNetworkOptions net;
  net.loss = 0.10;
  GossipOptions options = TestOptions();
  options.suspicion_timeout = std::chrono::milliseconds(10000);
  SimCluster cluster(60, options, net, /*converged=*/true);
  Publish(cluster, 11, 1);
  uint64_t version = KeyVersion(cluster.member(11).view().Get(cluster.IndexOf(11))->key);
  cluster.network().RunFor(3000);
  CHECK(EveryoneHas(cluster, 11, version));
  CHECK(cluster.network().messages_lost() > 0);
}

TEST_CASE("corrupt, foreign and malformed messages are dropped and counted; the member keeps working") {
  SimCluster cluster(5, TestOptions(), SimNetworkOptions{}, /*converged=*/true);
  GossipNode& node = cluster.member(2);
  node.ReceiveBytes(std::string("\xff\xff\xff\x01garbage", 11));
  CHECK(node.stats().dropped_corrupt == 1);

  rpc::GossipMessage foreign;
  foreign.set_cluster_id("another-cluster");
  foreign.set_from_address(SimNetwork::AddressOf(1));
  foreign.mutable_ping()->set_seq(1);
  node.Receive(foreign);
  CHECK(node.stats().dropped_wrong_cluster == 1);

  rpc::GossipMessage short_digest;
  short_digest.set_cluster_id("test-cluster");
  short_digest.set_from_address(SimNetwork::AddressOf(1));
  short_digest.mutable_buckets()->add_hashes(42);  // must carry one hash per bucket
  node.Receive(short_digest);
  rpc::GossipMessage bad_entry = short_digest;
  bad_entry.mutable_entries()->add_entries();  // no node ID
  node.Receive(bad_entry);
  CHECK(node.stats().dropped_malformed == 2);

  Publish(cluster, 2, 5);
  uint64_t version = KeyVersion(node.view().Get(cluster.IndexOf(2))->key);
  cluster.network().RunFor(1500);
  CHECK(EveryoneHas(cluster, 2, version));
}

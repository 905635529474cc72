// orb_gossip_sim: the gossip protocol of src/gossip/ run over a deterministic simulated
// network, at 100, 1,000 and 10,000 nodes, with and without 1% message loss.
//
// Per size it measures, with the default knobs (100 ms rounds, fan-out 3, 500 ms probes,
// 3 s suspicion), once with the default GCS exchange (about 100 members reach the GCS
// per round, so spreading at scale is peer-to-peer) and once with every member
// exchanging with the GCS every round (a star: fast, but the GCS takes O(N) traffic),
// and once with peer-to-peer gossip alone:
//   - convergence: one node publishes a change; simulated time (and rounds) until every
//     member holds it; median and p99 over many changes;
//   - bytes each node sends per round, while changes spread and when nothing changes;
//   - detection: a node is cut off; time until the GCS declares it dead, and until
//     every member knows.
// Prints one JSON line per (nodes, loss), then a Markdown table.
//
// Usage: orb_gossip_sim [--sizes 100,1000,10000] [--trials N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gossip/sim_network.h"

using namespace orb::gossip;

namespace {

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

uint64_t RayletBytesSent(SimCluster& cluster) {
  uint64_t total = 0;
  for (uint32_t m = 1; m < cluster.size(); ++m) total += cluster.network().bytes_sent(m);
  return total;
}

bool EveryLiveMemberHas(SimCluster& cluster, const std::vector<bool>& down, uint32_t index, uint64_t version) {
  for (uint32_t m = 0; m < cluster.size(); ++m) {
    if (down[m]) continue;
    const MemberSlot* slot = cluster.member(m).view().Get(index);
    if (!slot || KeyVersion(slot->key) < version) return false;
  }
  return true;
}

bool EveryLiveMemberSeesDead(SimCluster& cluster, const std::vector<bool>& down, uint32_t index) {
  for (uint32_t m = 0; m < cluster.size(); ++m) {
    if (down[m]) continue;
    const MemberSlot* slot = cluster.member(m).view().Get(index);
    if (!slot || KeyState(slot->key) != MemberState::kDead) return false;
  }
  return true;
}

// Members never exchange with the GCS themselves (it still starts exchanges of its own):
// convergence by peer-to-peer gossip alone.
constexpr int kPeersOnly = 1 << 30;

const char* ModeName(int seed_every) {
  return seed_every == 0 ? "auto (~100/round)" : seed_every == 1 ? "every round" : "none (peers only)";
}

struct Result {
  uint32_t nodes;
  int seed_every;
  double loss;
  std::vector<double> converge_ms;
  double bytes_per_round_changing = 0;
  double bytes_per_round_idle = 0;
  double gcs_bytes_in_per_round = 0;
  std::vector<double> detect_ms;
  std::vector<double> dead_everywhere_ms;
  double wall_s = 0;
};

Result Simulate(uint32_t nodes, int seed_every, double loss, int trials, int kills) {
  auto wall_start = std::chrono::steady_clock::now();
  GossipOptions options;
  options.cluster_id = "sim";
  options.seed_every_rounds = seed_every;
  SimNetworkOptions net;
  net.loss = loss;
  net.seed = nodes * 7 + static_cast<uint64_t>(loss * 1000) + 1;
  SimCluster cluster(nodes, options, net, /*converged=*/true);
  SimNetwork& network = cluster.network();
  std::mt19937_64 random(net.seed);
  std::vector<bool> down(cluster.size(), false);
  const double round_ms = static_cast<double>(options.round_interval.count());
  Result r{nodes, seed_every, loss, {}, 0, 0, 0, {}, {}, 0};

  network.RunFor(1000);  // let probes and rounds settle into their phases

  uint64_t bytes0 = RayletBytesSent(cluster);
  int64_t t0 = network.now();
  network.RunFor(1000);
  r.bytes_per_round_idle = static_cast<double>(RayletBytesSent(cluster) - bytes0) / nodes /
                           (static_cast<double>(network.now() - t0) / round_ms);

  bytes0 = RayletBytesSent(cluster);
  uint64_t gcs_in0 = network.bytes_received(0);
  t0 = network.now();
  for (int trial = 0; trial < trials; ++trial) {
    uint32_t member = 1 + static_cast<uint32_t>(random() % nodes);
    GossipNode& node = cluster.member(member);
    uint32_t index = cluster.IndexOf(member);
    orb::rpc::GossipNodeState state = *node.view().Get(index)->payload;
    (*state.mutable_resources_available())["CPU"] = static_cast<double>(random() % 8);
    node.SetLocalState(std::move(state));
    uint64_t version = KeyVersion(node.view().Get(index)->key);
    int64_t start = network.now();
    while (!EveryLiveMemberHas(cluster, down, index, version) && network.now() - start < 60000) network.RunFor(5);
    r.converge_ms.push_back(static_cast<double>(network.now() - start));
  }
  double rounds = static_cast<double>(network.now() - t0) / round_ms;
  r.bytes_per_round_changing = static_cast<double>(RayletBytesSent(cluster) - bytes0) / nodes / rounds;
  r.gcs_bytes_in_per_round = static_cast<double>(network.bytes_received(0) - gcs_in0) / rounds;

  for (int k = 0; k < kills; ++k) {
    uint32_t victim = 1 + static_cast<uint32_t>(random() % nodes);
    if (down[victim]) continue;
    down[victim] = true;
    network.SetDown(victim, true);
    uint32_t index = cluster.IndexOf(victim);
    int64_t start = network.now();
    double detected = -1;
    while (network.now() - start < 60000) {
      network.RunFor(10);
      const MemberSlot* at_gcs = cluster.gcs().view().Get(index);
      if (detected < 0 && at_gcs && KeyState(at_gcs->key) == MemberState::kDead) {
        detected = static_cast<double>(network.now() - start);
      }
      if (detected >= 0 && EveryLiveMemberSeesDead(cluster, down, index)) break;
    }
    r.detect_ms.push_back(detected);
    r.dead_everywhere_ms.push_back(static_cast<double>(network.now() - start));
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

std::vector<uint32_t> ParseSizes(const std::string& text) {
  std::vector<uint32_t> sizes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) sizes.push_back(static_cast<uint32_t>(std::stoul(item)));
  return sizes;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint32_t> sizes = {100, 1000, 10000};
  int trials_override = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--sizes") == 0) {
      sizes = ParseSizes(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--trials") == 0) {
      trials_override = std::stoi(argv[i + 1]);
    } else {
      std::cerr << "usage: orb_gossip_sim [--sizes 100,1000,10000] [--trials N]\n";
      return 2;
    }
  }
  std::vector<Result> results;
  for (uint32_t n : sizes) {
    int trials = trials_override > 0 ? trials_override : (n <= 100 ? 100 : n <= 1000 ? 50 : 20);
    int kills = n <= 1000 ? 5 : 3;
    for (int seed_every : {0, 1, kPeersOnly}) {
    for (double loss : {0.0, 0.01}) {
      Result r = Simulate(n, seed_every, loss, trials, kills);
      nlohmann::json line = {
          {"benchmark", "gossip_sim"},
          {"nodes", r.nodes},
          {"gcs_exchange", ModeName(r.seed_every)},
          {"loss", r.loss},
          {"changes", r.converge_ms.size()},
          {"convergence_ms_p50", Percentile(r.converge_ms, 0.5)},
          {"convergence_ms_p99", Percentile(r.converge_ms, 0.99)},
          {"convergence_rounds_p50", Percentile(r.converge_ms, 0.5) / 100.0},
          {"convergence_rounds_p99", Percentile(r.converge_ms, 0.99) / 100.0},
          {"bytes_per_node_per_round", std::lround(r.bytes_per_round_changing)},
          {"idle_bytes_per_node_per_round", std::lround(r.bytes_per_round_idle)},
          {"gcs_bytes_in_per_round", std::lround(r.gcs_bytes_in_per_round)},
          {"detect_dead_ms_p50", Percentile(r.detect_ms, 0.5)},
          {"detect_dead_ms_max", Percentile(r.detect_ms, 1.0)},
          {"dead_known_everywhere_ms_p50", Percentile(r.dead_everywhere_ms, 0.5)},
          {"wall_seconds", std::round(r.wall_s * 10) / 10},
      };
      std::cout << line.dump() << std::endl;
      results.push_back(std::move(r));
    }
    }
  }
  std::printf("\n| nodes | GCS exchange | loss | rounds to reach all (p50 / p99) | bytes/node/round (changing / idle) | GCS bytes in/round | dead declared (p50 / max) | dead known everywhere (p50) |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& r : results) {
    std::printf("| %u | %s | %.0f%% | %.1f / %.1f | %ld / %ld | %ld | %.1f s / %.1f s | %.1f s |\n", r.nodes, ModeName(r.seed_every), r.loss * 100,
                Percentile(r.converge_ms, 0.5) / 100.0, Percentile(r.converge_ms, 0.99) / 100.0,
                std::lround(r.bytes_per_round_changing), std::lround(r.bytes_per_round_idle),
                std::lround(r.gcs_bytes_in_per_round), Percentile(r.detect_ms, 0.5) / 1000.0,
                Percentile(r.detect_ms, 1.0) / 1000.0, Percentile(r.dead_everywhere_ms, 0.5) / 1000.0);
  }
  return 0;
}

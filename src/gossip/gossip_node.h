// One member of the cluster's gossip: spreads node state by push-pull anti-entropy and
// detects failed nodes SWIM-style. Raylets run one each; the GCS runs one as the
// authority, the only member that declares a node dead.
//
// Anti-entropy. Every round (`round_interval`, 100 ms by default) the member sends the
// root hash of its view to `fanout` random live members, and to the GCS (the seed)
// every round or, in large clusters, every few rounds (`seed_every_rounds`). A
// peer whose root differs answers with its bucket hashes; the initiator sends the
// (node, key) pairs of the buckets that differ; the peer answers with the entries it has
// newer and the IDs it wants; the initiator sends those. A change therefore spreads
// like an epidemic, reaching N members in O(log N) rounds, and converged views cost one
// 20-byte message per peer per round.
//
// Failure detection. Every `probe_interval` the member pings the next member in a
// round-robin order. With no ack within `probe_timeout` it asks `indirect_probes` other
// members to ping the target for it; with no ack by the end of the interval it marks
// the target SUSPECT at its current incarnation, which spreads like any change. A live
// node that hears it is suspected refutes by raising its incarnation. The authority,
// once it holds a suspicion for `suspicion_timeout` without a refutation, declares the
// node DEAD; DEAD beats every other key, so the node ID never returns (a restarted raylet
// joins under a new ID). A member that hears it is dead is told via `on_self_dead`.
//
// Everything outside arrives injected: the transport, the clock (milliseconds) and the
// random seed, so the same code runs over gRPC in daemons and over a deterministic
// simulated network (src/gossip/sim_network.h). Not thread-safe: call every method from
// one thread (the daemon's event loop).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>

#include "common/prometheus_text.h"
#include "gossip/member_view.h"

namespace orb::gossip {

struct GossipOptions {
  std::string cluster_id;  // messages from other clusters are dropped
  std::chrono::milliseconds round_interval{100};
  int fanout = 3;  // random peers per round, besides the GCS
  // Exchange with the GCS every this many rounds; 0 (default) adapts to the cluster's
  // size so that the GCS hears from about `gcs_peers_per_round` members per round:
  // every round up to that many nodes, every 10 rounds at ten times as many.
  int seed_every_rounds = 0;
  int gcs_peers_per_round = 100;
  std::chrono::milliseconds probe_interval{500};
  std::chrono::milliseconds probe_timeout{200};
  int indirect_probes = 3;
  std::chrono::milliseconds suspicion_timeout{3000};
  uint64_t random_seed = 0;  // 0: seeded from the node ID
};

class GossipTransport {
 public:
  virtual ~GossipTransport() = default;
  // Best effort, like UDP: a message may be lost; nothing reports it.
  virtual void Send(const std::string& address, const rpc::GossipMessage& message) = 0;
};

using GossipClock = std::function<int64_t()>;  // milliseconds, monotonic
// The daemons' clock: std::chrono::steady_clock in milliseconds.
GossipClock SteadyClock();

struct GossipStats {
  uint64_t received = 0;
  uint64_t dropped_corrupt = 0;        // did not parse
  uint64_t dropped_wrong_cluster = 0;  // cluster_id not ours
  uint64_t dropped_malformed = 0;      // parsed, but fields out of range
  uint64_t suspicions = 0;             // targets this member marked SUSPECT
  uint64_t refutations = 0;            // times this member raised its incarnation
  uint64_t declared_dead = 0;          // authority only
  uint64_t rounds = 0;                 // gossip rounds started
  uint64_t sent = 0;                   // messages sent
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
};

// The stats as named counters (gossip_received, gossip_dropped_corrupt, ...).
std::map<std::string, int64_t> GossipMetrics(const GossipStats& stats);

class GossipNode;
// The stats as counters and the members this node's view holds by state
// (orb_gossip_members{state}), for /metrics.
void AppendGossipMetrics(const GossipNode& node, prom::Exposition* out);

class GossipNode {
 public:
  // `self_id` empty: the GCS (authority, not itself an entry). `seed_address`: the GCS,
  // empty on the GCS itself.
  GossipNode(std::string self_id, std::string self_address, std::string seed_address, GossipOptions options,
             NodeDirectory* directory, GossipTransport* transport, GossipClock clock);

  bool is_authority() const { return self_id_.empty(); }
  const GossipOptions& options() const { return options_; }

  // Publishes this node's new state (raylets only): the version goes up by one.
  void SetLocalState(rpc::GossipNodeState state);
  // Runs whatever is due: a round, a probe step, a suspicion expiry. Call every ~10 ms.
  void Tick();
  enum class Received { kTaken, kCorrupt, kWrongCluster, kMalformed, kIgnored };
  Received Receive(const rpc::GossipMessage& message);
  // Parses, then Receive(); corrupt bytes are counted and dropped.
  Received ReceiveBytes(const std::string& bytes);
  // A GCS restarted without its storage starts a new cluster: members rejoin under its ID.
  void set_cluster_id(std::string cluster_id) { options_.cluster_id = std::move(cluster_id); }

  // Takes an entry known from elsewhere (the GCS's node table) if it is newer.
  void Seed(const std::string& node_id, MemberKey key, NodePayload payload);
  void Seed(uint32_t index, MemberKey key, NodePayload payload);
  // Authority only: marks the node DEAD for good.
  void DeclareDead(const std::string& node_id);

  const MemberView& view() const { return view_; }
  const NodeDirectory& directory() const { return *directory_; }
  const GossipStats& stats() const { return stats_; }
  std::optional<uint32_t> self_index() const { return self_index_; }

  std::function<void(uint32_t index)> on_change;  // an entry of the view changed
  std::function<void()> on_self_dead;             // the authority declared this node dead

 private:
  struct Probe {
    uint32_t target = 0;
    uint64_t seq = 0;
    int64_t sent_ms = 0;
    bool acked = false;
    bool indirect_sent = false;
  };
  struct Relay {
    std::string requester;
    uint64_t requester_seq = 0;
    int64_t expires_ms = 0;
  };

  rpc::GossipMessage NewMessage() const;
  void Send(const std::string& address, const rpc::GossipMessage& message);
  bool IsLiveMember(uint32_t index) const;
  const std::string* AddressOf(uint32_t index) const;
  std::optional<uint32_t> RandomLiveMember(uint32_t exclude);
  int SeedEveryRounds() const;

  void StartRound();
  void FinishProbe();
  void StartProbe();
  void SendIndirectProbes();
  void CheckSuspicions();

  void OnRoot(const rpc::GossipMessage& m);
  void OnBuckets(const rpc::GossipMessage& m);
  void OnKeys(const rpc::GossipMessage& m);
  void OnEntries(const rpc::GossipMessage& m);
  void OnPing(const rpc::GossipMessage& m);
  void OnAck(const rpc::GossipMessage& m);
  void OnPingReq(const rpc::GossipMessage& m);

  void AddEntry(rpc::Entries* entries, uint32_t index) const;
  void ApplyEntry(const rpc::GossipEntry& entry);
  void Changed(uint32_t index);
  bool Validate(const rpc::GossipMessage& m) const;

  std::string self_id_;
  std::string self_address_;
  std::string seed_address_;
  GossipOptions options_;
  NodeDirectory* directory_;
  GossipTransport* transport_;
  GossipClock clock_;
  MemberView view_;
  std::mt19937_64 rng_;
  GossipStats stats_;

  std::optional<uint32_t> self_index_;
  uint32_t incarnation_ = 1;
  uint64_t version_ = 0;
  bool self_dead_ = false;

  int64_t next_round_ms_ = 0;
  int64_t next_probe_ms_ = 0;
  uint64_t rounds_ = 0;
  uint32_t probe_cursor_ = 0;
  uint64_t next_seq_ = 1;
  std::optional<Probe> probe_;
  std::unordered_map<uint64_t, Relay> relays_;
  std::unordered_map<uint32_t, int64_t> suspected_since_ms_;  // authority only
};

}  // namespace orb::gossip

// A deterministic network for gossip members in one process: simulated milliseconds,
// a fixed latency range, optional random loss, and members that can be cut off (a
// crashed node neither sends nor receives). Used by the gossip tests and by
// bench/gossip_sim to run thousands of members on one core.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gossip/gossip_node.h"

namespace orb::gossip {

struct SimNetworkOptions {
  int64_t min_latency_ms = 1;
  int64_t max_latency_ms = 3;
  double loss = 0.0;  // fraction of messages dropped at random
  int64_t tick_ms = 10;  // how often each member's Tick() runs
  uint64_t seed = 1;
};

class SimNetwork {
 public:
  explicit SimNetwork(SimNetworkOptions options);
  ~SimNetwork();

  static std::string AddressOf(uint32_t member) { return "sim:" + std::to_string(member); }
  // A transport that sends as `member`. Valid as long as the network.
  GossipTransport* TransportFor(uint32_t member);
  // Members receive messages and get Tick() calls once added.
  void Attach(uint32_t member, GossipNode* node);
  // A member that is down neither sends nor receives (a crashed or cut-off node).
  void SetDown(uint32_t member, bool down);

  int64_t now() const { return now_ms_; }
  GossipClock clock() const {
    return [this] { return now_ms_; };
  }
  // Advances simulated time one millisecond at a time, delivering and ticking.
  void RunFor(int64_t ms);
  void set_loss(double loss) { options_.loss = loss; }

  uint64_t bytes_sent(uint32_t member) const { return member < bytes_sent_.size() ? bytes_sent_[member] : 0; }
  uint64_t bytes_received(uint32_t member) const {
    return member < bytes_received_.size() ? bytes_received_[member] : 0;
  }
  uint64_t messages_sent() const { return messages_sent_; }
  uint64_t messages_lost() const { return messages_lost_; }

 private:
  class Endpoint;
  struct InFlight {
    uint32_t to;
    std::string bytes;
  };
  void Enqueue(uint32_t from, const std::string& address, const rpc::GossipMessage& message);
  void Grow(uint32_t member);

  SimNetworkOptions options_;
  std::mt19937_64 rng_;
  int64_t now_ms_ = 0;
  std::vector<GossipNode*> nodes_;
  std::vector<bool> down_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<uint64_t> bytes_sent_;
  std::vector<uint64_t> bytes_received_;
  // Messages by delivery time, modulo the ring size (> max latency).
  std::vector<std::vector<InFlight>> ring_;
  uint64_t messages_sent_ = 0;
  uint64_t messages_lost_ = 0;
};

// A GCS (member 0, the authority) and `nodes` raylets (members 1..nodes) on one
// SimNetwork. With `converged` every view starts holding every node's entry, as in a
// cluster that has been running; otherwise raylets start knowing only themselves and
// learn the rest from the GCS.
class SimCluster {
 public:
  SimCluster(uint32_t nodes, GossipOptions options, SimNetworkOptions network, bool converged);
  ~SimCluster();

  static std::string NodeIdOf(uint32_t member);
  uint32_t size() const { return static_cast<uint32_t>(members_.size()); }
  GossipNode& member(uint32_t i) { return *members_[i]; }
  GossipNode& gcs() { return *members_[0]; }
  SimNetwork& network() { return network_; }
  NodeDirectory& directory() { return directory_; }
  // The directory index of raylet `member`'s entry.
  uint32_t IndexOf(uint32_t member) const { return *members_[member]->self_index(); }

 private:
  NodeDirectory directory_;
  SimNetwork network_;
  std::vector<std::unique_ptr<GossipNode>> members_;
};

}  // namespace orb::gossip

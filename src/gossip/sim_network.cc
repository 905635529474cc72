#include "gossip/sim_network.h"

#include <charconv>
#include <stdexcept>

namespace orb::gossip {

class SimNetwork::Endpoint : public GossipTransport {
 public:
  Endpoint(SimNetwork* network, uint32_t member) : network_(network), member_(member) {}
  void Send(const std::string& address, const rpc::GossipMessage& message) override {
    network_->Enqueue(member_, address, message);
  }

 private:
  SimNetwork* network_;
  uint32_t member_;
};

SimNetwork::SimNetwork(SimNetworkOptions options)
    : options_(options), rng_(options.seed), ring_(static_cast<size_t>(options.max_latency_ms + 2)) {
  if (options_.min_latency_ms < 1 || options_.max_latency_ms < options_.min_latency_ms) {
    throw std::invalid_argument("SimNetwork: latency must be at least 1 ms and min <= max");
  }
}

SimNetwork::~SimNetwork() = default;

void SimNetwork::Grow(uint32_t member) {
  if (member < nodes_.size()) return;
  nodes_.resize(member + 1, nullptr);
  down_.resize(member + 1, false);
  bytes_sent_.resize(member + 1, 0);
  bytes_received_.resize(member + 1, 0);
  while (endpoints_.size() <= member) {
    endpoints_.push_back(std::make_unique<Endpoint>(this, static_cast<uint32_t>(endpoints_.size())));
  }
}

GossipTransport* SimNetwork::TransportFor(uint32_t member) {
  Grow(member);
  return endpoints_[member].get();
}

void SimNetwork::Attach(uint32_t member, GossipNode* node) {
  Grow(member);
  nodes_[member] = node;
}

void SimNetwork::SetDown(uint32_t member, bool down) {
  Grow(member);
  down_[member] = down;
}

void SimNetwork::Enqueue(uint32_t from, const std::string& address, const rpc::GossipMessage& message) {
  if (down_[from]) return;
  // An address that is no member's (a message may name any reply address) reaches no one.
  uint32_t to = 0;
  if (address.rfind("sim:", 0) != 0 ||
      std::from_chars(address.data() + 4, address.data() + address.size(), to).ptr != address.data() + address.size() ||
      address.size() == 4) {
    return;
  }
  std::string bytes = message.SerializeAsString();
  bytes_sent_[from] += bytes.size();
  ++messages_sent_;
  if (to >= nodes_.size() || down_[to]) return;
  if (options_.loss > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < options_.loss) {
    ++messages_lost_;
    return;
  }
  int64_t latency = options_.min_latency_ms +
                    static_cast<int64_t>(rng_() % static_cast<uint64_t>(options_.max_latency_ms - options_.min_latency_ms + 1));
  ring_[static_cast<size_t>((now_ms_ + latency) % static_cast<int64_t>(ring_.size()))].push_back({to, std::move(bytes)});
}

void SimNetwork::RunFor(int64_t ms) {
  int64_t end = now_ms_ + ms;
  while (now_ms_ < end) {
    ++now_ms_;
    auto& due = ring_[static_cast<size_t>(now_ms_ % static_cast<int64_t>(ring_.size()))];
    std::vector<InFlight> batch;
    batch.swap(due);
    for (auto& message : batch) {
      if (down_[message.to] || !nodes_[message.to]) continue;
      bytes_received_[message.to] += message.bytes.size();
      nodes_[message.to]->ReceiveBytes(message.bytes);
    }
    for (size_t i = static_cast<size_t>(now_ms_ % options_.tick_ms); i < nodes_.size();
         i += static_cast<size_t>(options_.tick_ms)) {
      if (nodes_[i] && !down_[i]) nodes_[i]->Tick();
    }
  }
}

std::string SimCluster::NodeIdOf(uint32_t member) {
  std::string id(16, '\0');
  for (size_t i = 0; i < 4; ++i) id[i] = static_cast<char>((member >> (8 * i)) & 0xff);
  id[15] = 'n';
  return id;
}

SimCluster::SimCluster(uint32_t nodes, GossipOptions options, SimNetworkOptions network, bool converged)
    : network_(network) {
  members_.reserve(nodes + 1);
  for (uint32_t m = 0; m <= nodes; ++m) {
    GossipOptions member_options = options;
    member_options.random_seed = network.seed * 1000003 + m + 1;
    std::string id = m == 0 ? std::string() : NodeIdOf(m);
    std::string seed = m == 0 ? std::string() : SimNetwork::AddressOf(0);
    members_.push_back(std::make_unique<GossipNode>(id, SimNetwork::AddressOf(m), seed, member_options, &directory_,
                                                    network_.TransportFor(m), network_.clock()));
    if (m > 0) {
      rpc::GossipNodeState state;
      state.set_address(SimNetwork::AddressOf(m));
      (*state.mutable_resources_total())["CPU"] = 8;
      (*state.mutable_resources_available())["CPU"] = 8;
      members_.back()->SetLocalState(std::move(state));
    }
    network_.Attach(m, members_.back().get());
  }
  if (!converged) return;
  std::vector<std::pair<MemberKey, NodePayload>> entries(nodes + 1);
  for (uint32_t m = 1; m <= nodes; ++m) {
    const MemberSlot* own = members_[m]->view().Get(IndexOf(m));
    entries[m] = {own->key, own->payload};
  }
  for (auto& member : members_) {
    for (uint32_t m = 1; m <= nodes; ++m) member->Seed(IndexOf(m), entries[m].first, entries[m].second);
  }
}

SimCluster::~SimCluster() = default;

}  // namespace orb::gossip

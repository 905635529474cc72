#include "gossip/gossip_node.h"

#include "common/metrics.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

namespace orb::gossip {
namespace {

constexpr size_t kMaxNodeIdBytes = 64;

}  // namespace

GossipClock SteadyClock() {
  return [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
}

std::map<std::string, int64_t> GossipMetrics(const GossipStats& stats) {
  auto n = [](uint64_t v) { return static_cast<int64_t>(v); };
  return {{"gossip_received", n(stats.received)},
          {"gossip_dropped_corrupt", n(stats.dropped_corrupt)},
          {"gossip_dropped_wrong_cluster", n(stats.dropped_wrong_cluster)},
          {"gossip_dropped_malformed", n(stats.dropped_malformed)},
          {"gossip_suspicions", n(stats.suspicions)},
          {"gossip_refutations", n(stats.refutations)},
          {"gossip_declared_dead", n(stats.declared_dead)},
          {"gossip_rounds", n(stats.rounds)},
          {"gossip_sent", n(stats.sent)},
          {"gossip_sent_bytes", n(stats.bytes_sent)},
          {"gossip_received_bytes", n(stats.bytes_received)}};
}

void AppendGossipMetrics(const GossipNode& node, prom::Exposition* out) {
  AppendCounters(GossipMetrics(node.stats()), out);
  std::map<MemberState, int64_t> by_state{{MemberState::kAlive, 0}, {MemberState::kSuspect, 0}, {MemberState::kDead, 0}};
  const MemberView& view = node.view();
  for (uint32_t i = 0; i < view.capacity(); ++i) {
    const MemberSlot* slot = view.Get(i);
    if (slot && slot->known()) ++by_state[KeyState(slot->key)];
  }
  for (const auto& [state, n] : by_state) {
    out->Gauge("orb_gossip_members", "members in this node's gossip view, by state", n, {{"state", StateName(state)}});
  }
}

GossipNode::GossipNode(std::string self_id, std::string self_address, std::string seed_address,
                       GossipOptions options, NodeDirectory* directory, GossipTransport* transport, GossipClock clock)
    : self_id_(std::move(self_id)),
      self_address_(std::move(self_address)),
      seed_address_(std::move(seed_address)),
      options_(std::move(options)),
      directory_(directory),
      transport_(transport),
      clock_(std::move(clock)),
      view_(directory),
      rng_(options_.random_seed != 0 ? options_.random_seed : std::hash<std::string>()(self_id_ + self_address_)) {
  if (!self_id_.empty()) self_index_ = directory_->Intern(self_id_);
  int64_t now = clock_();
  // Random phases keep members from moving in lockstep.
  next_round_ms_ = now + static_cast<int64_t>(rng_() % std::max<int64_t>(1, options_.round_interval.count()));
  next_probe_ms_ = now + static_cast<int64_t>(rng_() % std::max<int64_t>(1, options_.probe_interval.count()));
  probe_cursor_ = static_cast<uint32_t>(rng_());
}

void GossipNode::SetLocalState(rpc::GossipNodeState state) {
  if (!self_index_ || self_dead_) return;
  ++version_;
  view_.Set(*self_index_, PackKey(incarnation_, MemberState::kAlive, version_),
            std::make_shared<const rpc::GossipNodeState>(std::move(state)));
  Changed(*self_index_);
}

void GossipNode::Seed(const std::string& node_id, MemberKey key, NodePayload payload) {
  Seed(directory_->Intern(node_id), key, std::move(payload));
}

void GossipNode::Seed(uint32_t index, MemberKey key, NodePayload payload) {
  if (self_index_ && index == *self_index_) return;
  if (view_.Apply(index, key, std::move(payload))) Changed(index);
}

void GossipNode::DeclareDead(const std::string& node_id) {
  if (!is_authority()) return;
  uint32_t index = directory_->Intern(node_id);
  const MemberSlot* slot = view_.Get(index);
  if (slot && KeyState(slot->key) == MemberState::kDead) return;
  MemberKey key = slot ? slot->key : 0;
  NodePayload payload = slot ? slot->payload : std::make_shared<const rpc::GossipNodeState>();
  view_.Set(index, PackKey(KeyIncarnation(key), MemberState::kDead, KeyVersion(key)), std::move(payload));
  ++stats_.declared_dead;
  Changed(index);
}

void GossipNode::Changed(uint32_t index) {
  if (is_authority()) {
    const MemberSlot* slot = view_.Get(index);
    if (slot && KeyState(slot->key) == MemberState::kSuspect) {
      suspected_since_ms_.emplace(index, clock_());
    } else {
      suspected_since_ms_.erase(index);
    }
  }
  if (on_change) on_change(index);
}

rpc::GossipMessage GossipNode::NewMessage() const {
  rpc::GossipMessage m;
  m.set_cluster_id(options_.cluster_id);
  m.set_from_node(self_id_);
  m.set_from_address(self_address_);
  return m;
}

void GossipNode::Send(const std::string& address, const rpc::GossipMessage& message) {
  if (address.empty() || address == self_address_) return;
  ++stats_.sent;
  stats_.bytes_sent += message.ByteSizeLong();
  transport_->Send(address, message);
}

bool GossipNode::IsLiveMember(uint32_t index) const {
  if (self_index_ && index == *self_index_) return false;
  const MemberSlot* slot = view_.Get(index);
  return slot && KeyState(slot->key) != MemberState::kDead && !slot->payload->address().empty();
}

const std::string* GossipNode::AddressOf(uint32_t index) const {
  const MemberSlot* slot = view_.Get(index);
  return slot ? &slot->payload->address() : nullptr;
}

std::optional<uint32_t> GossipNode::RandomLiveMember(uint32_t exclude) {
  uint32_t n = view_.capacity();
  if (n == 0) return std::nullopt;
  // Rejection sampling; views are mostly live members, so a few draws suffice.
  for (int attempt = 0; attempt < 32; ++attempt) {
    uint32_t index = static_cast<uint32_t>(rng_() % n);
    if (index != exclude && IsLiveMember(index)) return index;
  }
  return std::nullopt;
}

void GossipNode::Tick() {
  if (self_dead_) return;
  int64_t now = clock_();
  if (now >= next_round_ms_) {
    ++stats_.rounds;
    StartRound();
    next_round_ms_ = std::max(next_round_ms_ + options_.round_interval.count(), now + 1);
  }
  if (probe_ && !probe_->acked && !probe_->indirect_sent && now >= probe_->sent_ms + options_.probe_timeout.count()) {
    SendIndirectProbes();
  }
  if (now >= next_probe_ms_) {
    FinishProbe();
    StartProbe();
    next_probe_ms_ = std::max(next_probe_ms_ + options_.probe_interval.count(), now + 1);
  }
  for (auto it = relays_.begin(); it != relays_.end();) {
    it = it->second.expires_ms <= now ? relays_.erase(it) : std::next(it);
  }
  if (is_authority()) CheckSuspicions();
}

void GossipNode::StartRound() {
  ++rounds_;
  rpc::GossipMessage m = NewMessage();
  m.mutable_root()->set_root(view_.root());
  std::unordered_set<uint32_t> chosen;
  for (int i = 0; i < options_.fanout; ++i) {
    auto peer = RandomLiveMember(self_index_.value_or(UINT32_MAX));
    if (!peer || !chosen.insert(*peer).second) continue;
    Send(*AddressOf(*peer), m);
  }
  if (!seed_address_.empty() && rounds_ % static_cast<uint64_t>(SeedEveryRounds()) == 0) Send(seed_address_, m);
}

int GossipNode::SeedEveryRounds() const {
  if (options_.seed_every_rounds > 0) return options_.seed_every_rounds;
  size_t per_round = static_cast<size_t>(std::max(1, options_.gcs_peers_per_round));
  return static_cast<int>(std::max<size_t>(1, (view_.known() + per_round - 1) / per_round));
}

void GossipNode::StartProbe() {
  uint32_t n = view_.capacity();
  for (uint32_t step = 0; step < n; ++step) {
    uint32_t index = probe_cursor_++ % n;
    if (!IsLiveMember(index)) continue;
    probe_ = Probe{index, next_seq_++, clock_(), false, false};
    rpc::GossipMessage m = NewMessage();
    m.mutable_ping()->set_seq(probe_->seq);
    Send(*AddressOf(index), m);
    return;
  }
}

void GossipNode::SendIndirectProbes() {
  probe_->indirect_sent = true;
  const std::string* target = AddressOf(probe_->target);
  if (!target) return;
  rpc::GossipMessage m = NewMessage();
  m.mutable_ping_req()->set_seq(probe_->seq);
  m.mutable_ping_req()->set_target_address(*target);
  std::unordered_set<uint32_t> chosen;
  for (int i = 0; i < options_.indirect_probes; ++i) {
    auto helper = RandomLiveMember(probe_->target);
    if (!helper || !chosen.insert(*helper).second) continue;
    Send(*AddressOf(*helper), m);
  }
}

void GossipNode::FinishProbe() {
  if (!probe_) return;
  Probe probe = *probe_;
  probe_.reset();
  if (probe.acked) return;
  const MemberSlot* slot = view_.Get(probe.target);
  if (!slot || KeyState(slot->key) != MemberState::kAlive) return;
  ++stats_.suspicions;
  view_.Set(probe.target, PackKey(KeyIncarnation(slot->key), MemberState::kSuspect, KeyVersion(slot->key)),
            slot->payload);
  Changed(probe.target);
}

void GossipNode::CheckSuspicions() {
  int64_t now = clock_();
  std::vector<uint32_t> expired;
  for (const auto& [index, since] : suspected_since_ms_) {
    if (now - since >= options_.suspicion_timeout.count()) expired.push_back(index);
  }
  for (uint32_t index : expired) DeclareDead(directory_->id(index));
}

GossipNode::Received GossipNode::ReceiveBytes(const std::string& bytes) {
  rpc::GossipMessage m;
  stats_.bytes_received += bytes.size();
  if (!m.ParseFromString(bytes)) {
    ++stats_.dropped_corrupt;
    return Received::kCorrupt;
  }
  return Receive(m);
}

bool GossipNode::Validate(const rpc::GossipMessage& m) const {
  if (m.from_node().size() > kMaxNodeIdBytes || m.from_address().empty()) return false;
  switch (m.body_case()) {
    case rpc::GossipMessage::kBuckets:
      return static_cast<uint32_t>(m.buckets().hashes_size()) == kDigestBuckets;
    case rpc::GossipMessage::kKeys:
      if (m.keys().node_ids_size() != m.keys().keys_size()) return false;
      for (uint32_t b : m.keys().buckets()) {
        if (b >= kDigestBuckets) return false;
      }
      for (const auto& id : m.keys().node_ids()) {
        if (id.empty() || id.size() > kMaxNodeIdBytes) return false;
      }
      return true;
    case rpc::GossipMessage::kEntries:
      for (const auto& e : m.entries().entries()) {
        if (e.node_id().empty() || e.node_id().size() > kMaxNodeIdBytes || e.state() > rpc::GossipEntry::DEAD) {
          return false;
        }
      }
      return true;
    case rpc::GossipMessage::BODY_NOT_SET:
      return false;
    default:
      return true;
  }
}

GossipNode::Received GossipNode::Receive(const rpc::GossipMessage& m) {
  if (self_dead_) return Received::kIgnored;
  if (m.cluster_id() != options_.cluster_id) {
    ++stats_.dropped_wrong_cluster;
    return Received::kWrongCluster;
  }
  if (!Validate(m)) {
    ++stats_.dropped_malformed;
    return Received::kMalformed;
  }
  ++stats_.received;
  switch (m.body_case()) {
    case rpc::GossipMessage::kRoot: OnRoot(m); break;
    case rpc::GossipMessage::kBuckets: OnBuckets(m); break;
    case rpc::GossipMessage::kKeys: OnKeys(m); break;
    case rpc::GossipMessage::kEntries: OnEntries(m); break;
    case rpc::GossipMessage::kPing: OnPing(m); break;
    case rpc::GossipMessage::kAck: OnAck(m); break;
    case rpc::GossipMessage::kPingReq: OnPingReq(m); break;
    default: break;
  }
  return Received::kTaken;
}

void GossipNode::OnRoot(const rpc::GossipMessage& m) {
  if (m.root().root() == view_.root()) return;
  rpc::GossipMessage reply = NewMessage();
  auto* hashes = reply.mutable_buckets()->mutable_hashes();
  hashes->Reserve(kDigestBuckets);
  for (uint64_t h : view_.bucket_hashes()) hashes->Add(h);
  Send(m.from_address(), reply);
}

void GossipNode::OnBuckets(const rpc::GossipMessage& m) {
  rpc::GossipMessage reply = NewMessage();
  rpc::DigestKeys* keys = reply.mutable_keys();
  const auto& mine = view_.bucket_hashes();
  for (uint32_t b = 0; b < kDigestBuckets; ++b) {
    if (m.buckets().hashes(static_cast<int>(b)) == mine[b]) continue;
    keys->add_buckets(b);
    for (uint32_t index : directory_->bucket_members(b)) {
      const MemberSlot* slot = view_.Get(index);
      if (!slot) continue;
      keys->add_node_ids(directory_->id(index));
      keys->add_keys(slot->key);
    }
  }
  if (keys->buckets_size() > 0) Send(m.from_address(), reply);
}

void GossipNode::AddEntry(rpc::Entries* entries, uint32_t index) const {
  const MemberSlot* slot = view_.Get(index);
  if (!slot) return;
  rpc::GossipEntry* e = entries->add_entries();
  e->set_node_id(directory_->id(index));
  e->set_incarnation(KeyIncarnation(slot->key));
  e->set_state(static_cast<rpc::GossipEntry::State>(KeyState(slot->key)));
  e->set_version(KeyVersion(slot->key));
  *e->mutable_payload() = *slot->payload;
}

void GossipNode::OnKeys(const rpc::GossipMessage& m) {
  const rpc::DigestKeys& theirs = m.keys();
  std::unordered_map<uint32_t, MemberKey> their_keys;
  their_keys.reserve(static_cast<size_t>(theirs.node_ids_size()));
  for (int i = 0; i < theirs.node_ids_size(); ++i) their_keys[directory_->Intern(theirs.node_ids(i))] = theirs.keys(i);

  rpc::GossipMessage reply = NewMessage();
  rpc::Entries* entries = reply.mutable_entries();
  for (const auto& [index, key] : their_keys) {
    const MemberSlot* mine = view_.Get(index);
    if (!mine || IsNewer(key, mine->key)) {
      entries->add_want(directory_->id(index));
    } else if (IsNewer(mine->key, key)) {
      AddEntry(entries, index);
    }
  }
  for (uint32_t b : theirs.buckets()) {
    for (uint32_t index : directory_->bucket_members(b)) {
      if (view_.Get(index) && !their_keys.count(index)) AddEntry(entries, index);
    }
  }
  if (entries->entries_size() > 0 || entries->want_size() > 0) Send(m.from_address(), reply);
}

void GossipNode::OnEntries(const rpc::GossipMessage& m) {
  for (const auto& entry : m.entries().entries()) ApplyEntry(entry);
  if (m.entries().want_size() == 0 || self_dead_) return;
  rpc::GossipMessage reply = NewMessage();
  for (const auto& id : m.entries().want()) {
    if (auto index = directory_->Find(id)) AddEntry(reply.mutable_entries(), *index);
  }
  if (reply.entries().entries_size() > 0) Send(m.from_address(), reply);
}

void GossipNode::ApplyEntry(const rpc::GossipEntry& entry) {
  auto state = static_cast<MemberState>(entry.state());
  MemberKey key = PackKey(entry.incarnation(), state, entry.version());
  if (entry.node_id() == self_id_) {
    if (state == MemberState::kDead) {
      self_dead_ = true;
      if (on_self_dead) on_self_dead();
    } else if (state == MemberState::kSuspect && entry.incarnation() >= incarnation_) {
      // Refute: only a higher incarnation outranks the suspicion.
      incarnation_ = entry.incarnation() + 1;
      ++version_;
      ++stats_.refutations;
      const MemberSlot* own = view_.Get(*self_index_);
      NodePayload payload = own ? own->payload : std::make_shared<const rpc::GossipNodeState>();
      view_.Set(*self_index_, PackKey(incarnation_, MemberState::kAlive, version_), std::move(payload));
      Changed(*self_index_);
    }
    return;
  }
  uint32_t index = directory_->Intern(entry.node_id());
  const MemberSlot* current = view_.Get(index);
  if (current && !IsNewer(key, current->key)) return;
  view_.Set(index, key, std::make_shared<const rpc::GossipNodeState>(entry.payload()));
  Changed(index);
}

void GossipNode::OnPing(const rpc::GossipMessage& m) {
  rpc::GossipMessage reply = NewMessage();
  reply.mutable_ack()->set_seq(m.ping().seq());
  Send(m.from_address(), reply);
}

void GossipNode::OnAck(const rpc::GossipMessage& m) {
  uint64_t seq = m.ack().seq();
  if (probe_ && probe_->seq == seq) {
    probe_->acked = true;
    return;
  }
  auto relay = relays_.find(seq);
  if (relay == relays_.end()) return;
  rpc::GossipMessage forward = NewMessage();
  forward.mutable_ack()->set_seq(relay->second.requester_seq);
  Send(relay->second.requester, forward);
  relays_.erase(relay);
}

void GossipNode::OnPingReq(const rpc::GossipMessage& m) {
  uint64_t seq = next_seq_++;
  relays_[seq] = Relay{m.from_address(), m.ping_req().seq(), clock_() + options_.probe_interval.count()};
  rpc::GossipMessage ping = NewMessage();
  ping.mutable_ping()->set_seq(seq);
  Send(m.ping_req().target_address(), ping);
}

}  // namespace orb::gossip

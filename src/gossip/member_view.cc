#include "gossip/member_view.h"

#include <functional>

namespace orb::gossip {
namespace {

constexpr int kVersionBits = 38;
constexpr int kStateBits = 2;
constexpr uint64_t kVersionMask = (uint64_t{1} << kVersionBits) - 1;

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

MemberKey PackKey(uint32_t incarnation, MemberState state, uint64_t version) {
  return (uint64_t{incarnation} << (kVersionBits + kStateBits)) |
         (uint64_t{static_cast<uint8_t>(state)} << kVersionBits) | (version & kVersionMask);
}
uint32_t KeyIncarnation(MemberKey key) { return static_cast<uint32_t>(key >> (kVersionBits + kStateBits)); }
MemberState KeyState(MemberKey key) { return static_cast<MemberState>((key >> kVersionBits) & 3); }
uint64_t KeyVersion(MemberKey key) { return key & kVersionMask; }

bool IsNewer(MemberKey candidate, MemberKey current) {
  bool candidate_dead = KeyState(candidate) == MemberState::kDead;
  bool current_dead = KeyState(current) == MemberState::kDead;
  if (current_dead) return false;
  if (candidate_dead) return true;
  return candidate > current;
}

const char* StateName(MemberState state) {
  switch (state) {
    case MemberState::kAlive: return "ALIVE";
    case MemberState::kSuspect: return "SUSPECT";
    case MemberState::kDead: return "DEAD";
  }
  return "?";
}

uint32_t NodeDirectory::Intern(const std::string& node_id) {
  auto [it, inserted] = index_.emplace(node_id, size());
  if (inserted) {
    ids_.push_back(node_id);
    hashes_.push_back(Mix(std::hash<std::string>()(node_id)));
    buckets_[bucket(it->second)].push_back(it->second);
  }
  return it->second;
}

std::optional<uint32_t> NodeDirectory::Find(const std::string& node_id) const {
  auto it = index_.find(node_id);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

const MemberSlot* MemberView::Get(uint32_t index) const {
  if (index >= slots_.size() || !slots_[index].known()) return nullptr;
  return &slots_[index];
}

uint64_t MemberView::EntryHash(uint32_t index, MemberKey key) const { return Mix(directory_->hash(index) ^ Mix(key)); }

bool MemberView::Apply(uint32_t index, MemberKey key, NodePayload payload) {
  const MemberSlot* current = Get(index);
  if (current && !IsNewer(key, current->key)) return false;
  Set(index, key, std::move(payload));
  return true;
}

void MemberView::Set(uint32_t index, MemberKey key, NodePayload payload) {
  if (index >= slots_.size()) slots_.resize(std::max<size_t>(index + 1, directory_->size()));
  MemberSlot& slot = slots_[index];
  uint64_t change = EntryHash(index, key);
  if (slot.known()) {
    change ^= EntryHash(index, slot.key);
  } else {
    ++known_;
  }
  buckets_[directory_->bucket(index)] ^= change;
  root_ ^= change;
  slot.key = key;
  // A dead node's entry is a tombstone (kept so that the node never comes back): only
  // its addresses stay, so that a long-lived cluster's churn costs little.
  if (KeyState(key) == MemberState::kDead && payload &&
      (payload->resources_total_size() > 0 || payload->resources_available_size() > 0 || payload->labels_size() > 0 ||
       payload->pending_demand_size() > 0)) {
    auto tombstone = std::make_shared<rpc::GossipNodeState>();
    tombstone->set_address(payload->address());
    tombstone->set_object_manager_address(payload->object_manager_address());
    payload = std::move(tombstone);
  }
  slot.payload = std::move(payload);
}

}  // namespace orb::gossip

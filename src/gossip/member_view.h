// One member's versioned view of every node, and the node directory views share.
//
// NodeDirectory interns node IDs to dense indices, and gives each node a hash and a
// digest bucket (one of kDigestBuckets). A process holds one directory; a simulator
// shares one among thousands of members so that a view costs 24 bytes per node.
//
// MemberView keeps, per node, a packed key (incarnation, state, version) and the node's
// last payload, plus an XOR hash per bucket and over the whole view, updated in O(1) on
// every change: two views with the same root hold the same entries, and the buckets
// whose hashes differ say where to look.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gossip.pb.h"

namespace orb::gossip {

inline constexpr uint32_t kDigestBuckets = 256;

enum class MemberState : uint8_t { kAlive = 0, kSuspect = 1, kDead = 2 };

// Keys order entries: a higher incarnation wins, then SUSPECT over ALIVE, then a higher
// version. DEAD wins over everything, so a dead node never comes back.
using MemberKey = uint64_t;
MemberKey PackKey(uint32_t incarnation, MemberState state, uint64_t version);
uint32_t KeyIncarnation(MemberKey key);
MemberState KeyState(MemberKey key);
uint64_t KeyVersion(MemberKey key);
bool IsNewer(MemberKey candidate, MemberKey current);
const char* StateName(MemberState state);

class NodeDirectory {
 public:
  uint32_t Intern(const std::string& node_id);
  std::optional<uint32_t> Find(const std::string& node_id) const;
  const std::string& id(uint32_t index) const { return ids_[index]; }
  uint64_t hash(uint32_t index) const { return hashes_[index]; }
  uint32_t bucket(uint32_t index) const { return static_cast<uint32_t>(hashes_[index] % kDigestBuckets); }
  const std::vector<uint32_t>& bucket_members(uint32_t bucket) const { return buckets_[bucket]; }
  uint32_t size() const { return static_cast<uint32_t>(ids_.size()); }

 private:
  std::vector<std::string> ids_;
  std::vector<uint64_t> hashes_;
  std::unordered_map<std::string, uint32_t> index_;
  std::array<std::vector<uint32_t>, kDigestBuckets> buckets_;
};

using NodePayload = std::shared_ptr<const rpc::GossipNodeState>;

struct MemberSlot {
  MemberKey key = 0;
  NodePayload payload;  // null: the node is unknown to this view
  bool known() const { return payload != nullptr; }
};

class MemberView {
 public:
  explicit MemberView(const NodeDirectory* directory) : directory_(directory) {}

  // nullptr when this view has no entry for the node.
  const MemberSlot* Get(uint32_t index) const;
  // Takes the entry when the view has none or `key` is newer; true when it did.
  bool Apply(uint32_t index, MemberKey key, NodePayload payload);
  // Replaces the entry whatever it held (a member's own entry, a declared death).
  void Set(uint32_t index, MemberKey key, NodePayload payload);

  uint64_t root() const { return root_; }
  const std::array<uint64_t, kDigestBuckets>& bucket_hashes() const { return buckets_; }
  uint32_t capacity() const { return static_cast<uint32_t>(slots_.size()); }
  size_t known() const { return known_; }

 private:
  uint64_t EntryHash(uint32_t index, MemberKey key) const;

  const NodeDirectory* directory_;
  std::vector<MemberSlot> slots_;
  std::array<uint64_t, kDigestBuckets> buckets_{};
  uint64_t root_ = 0;
  size_t known_ = 0;
};

}  // namespace orb::gossip

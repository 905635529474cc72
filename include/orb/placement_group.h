// Placement groups: bundles of resources reserved together across nodes, all or none
// (gang scheduling), so that a job never holds half of what it needs.
//
//   orb::PlacementGroup pg = orb::CreatePlacementGroup(
//       {"trainers", {{{"CPU", 1}}, {{"CPU", 1}}}, orb::PlacementStrategy::STRICT_SPREAD});
//   if (pg.Wait(10)) orb::Task(Train).SetPlacementGroup(pg, 0).Remote();
//   orb::RemovePlacementGroup(pg.GetID());
//
// A group ends with the job that created it (its driver's Shutdown or death), as in
// Ray, unless its creation options say DETACHED. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "orb/config.h"
#include "orb/errors.h"

namespace orb {

enum class PlacementStrategy {
  PACK = 0,           // as few nodes as possible
  SPREAD = 1,         // different nodes where possible
  STRICT_PACK = 2,    // all bundles on one node, or wait
  STRICT_SPREAD = 3,  // every bundle on its own node, or wait
  UNRECOGNIZED = -1,
};

// Unscoped, as Ray's: orb::PlacementGroupState::CREATED and orb::CREATED both work.
enum PlacementGroupState {
  PENDING = 0,       // waiting for room
  CREATED = 1,       // every bundle reserved
  REMOVED = 2,       // removed (by RemovePlacementGroup or the end of its job)
  RESCHEDULING = 3,  // a node holding bundles died; placing those again
  UNRECOGNIZED = -1,
};

// The bundles of a group: resource name -> amount, one map per bundle. Built from
// braces ({{{"CPU", 1}}, {{"GPU", 1}}}) or from a vector of std::map or
// std::unordered_map (what Ray programs pass).
class Bundles : public std::vector<std::map<std::string, double>> {
 public:
  using vector::vector;
  Bundles() = default;
  Bundles(const std::vector<std::map<std::string, double>>& bundles) : vector(bundles) {}
  Bundles(const std::vector<std::unordered_map<std::string, double>>& bundles) {
    for (const auto& b : bundles) emplace_back(b.begin(), b.end());
  }
};

struct PlacementGroupCreationOptions {
  std::string name;  // unique in the namespace while the group lives; may be empty
  Bundles bundles;
  PlacementStrategy strategy = PlacementStrategy::PACK;
  ActorLifetime lifetime = ActorLifetime::NON_DETACHED;

  // DETACHED: the group outlives the job that created it, until RemovePlacementGroup.
  PlacementGroupCreationOptions& SetLifetime(ActorLifetime value) {
    lifetime = value;
    return *this;
  }
};

namespace internal {
// A group as the GCS reports it.
struct PlacementGroupData {
  std::string id;  // hex
  PlacementGroupCreationOptions options;
  int state = UNRECOGNIZED;
};
std::string CreatePlacementGroup(const PlacementGroupCreationOptions& options);
bool WaitPlacementGroupReady(const std::string& id_hex, int64_t timeout_ms);
void RemovePlacementGroup(const std::string& id_hex);
// By hex ID, or by name in this job's namespace when `id_hex` is empty; false if none.
bool LookUpPlacementGroup(const std::string& id_hex, const std::string& name, PlacementGroupData* out);
std::vector<PlacementGroupData> ListPlacementGroups();
}  // namespace internal

class PlacementGroup {
 public:
  PlacementGroup() = default;
  PlacementGroup(std::string id, PlacementGroupCreationOptions options,
                 PlacementGroupState state = PlacementGroupState::UNRECOGNIZED)
      : id_(std::move(id)), options_(std::move(options)), state_(state) {}

  // Hex ID.
  const std::string& GetID() const { return id_; }
  const std::string& GetName() const { return options_.name; }
  const Bundles& GetBundles() const { return options_.bundles; }
  PlacementStrategy GetStrategy() const { return options_.strategy; }
  bool Empty() const { return id_.empty(); }

  // The group's state now, asked of the GCS (for an empty group, or one the GCS does
  // not know: the state it was made with, UNRECOGNIZED by default).
  PlacementGroupState GetState() const {
    internal::PlacementGroupData data;
    if (id_.empty() || !internal::LookUpPlacementGroup(id_, "", &data)) return state_;
    return static_cast<PlacementGroupState>(data.state);
  }

  // True once every bundle is reserved; false if `timeout_seconds` pass first (or the
  // group is removed). A group that does not fit now stays pending and is placed when
  // resources free up.
  bool Wait(int timeout_seconds) const {
    return internal::WaitPlacementGroupReady(id_, static_cast<int64_t>(timeout_seconds) * 1000);
  }

 private:
  std::string id_;
  PlacementGroupCreationOptions options_;
  PlacementGroupState state_ = PlacementGroupState::UNRECOGNIZED;  // when made; GetState() asks anew
};

// Reserves the bundles (asynchronously: Wait() for them). A bundle with no resources or
// a non-positive amount, or a name a live group of the namespace has, is an orb::Error.
inline PlacementGroup CreatePlacementGroup(const PlacementGroupCreationOptions& options) {
  return PlacementGroup(internal::CreatePlacementGroup(options), options, PlacementGroupState::PENDING);
}

// Frees the bundles; tasks and actors running in them are killed. Removing a removed
// group does nothing.
inline void RemovePlacementGroup(const std::string& placement_group_id) {
  internal::RemovePlacementGroup(placement_group_id);
}

// The group with this hex ID (any state), or an empty group (Empty()) if there is none.
inline PlacementGroup GetPlacementGroupById(const std::string& placement_group_id) {
  internal::PlacementGroupData data;
  if (!internal::LookUpPlacementGroup(placement_group_id, "", &data)) return PlacementGroup();
  return PlacementGroup(data.id, data.options, static_cast<PlacementGroupState>(data.state));
}

// The live group with this name in this job's namespace, or an empty group.
inline PlacementGroup GetPlacementGroup(const std::string& name) {
  internal::PlacementGroupData data;
  if (name.empty() || !internal::LookUpPlacementGroup("", name, &data)) return PlacementGroup();
  return PlacementGroup(data.id, data.options, static_cast<PlacementGroupState>(data.state));
}

// Every group the cluster knows, removed ones included.
inline std::vector<PlacementGroup> GetAllPlacementGroups() {
  std::vector<PlacementGroup> groups;
  for (auto& data : internal::ListPlacementGroups()) {
    groups.emplace_back(data.id, data.options, static_cast<PlacementGroupState>(data.state));
  }
  return groups;
}

}  // namespace orb

// Placement groups: bundles of resources reserved together across nodes, all or none
// (gang scheduling), so that a job never holds half of what it needs.
//
//   orb::PlacementGroup pg = orb::CreatePlacementGroup(
//       {"trainers", {{{"CPU", 1}}, {{"CPU", 1}}}, orb::PlacementStrategy::STRICT_SPREAD});
//   if (pg.Wait(10)) orb::Task(Train).SetPlacementGroup(pg, 0).Remote();
//   orb::RemovePlacementGroup(pg.GetID());
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "orb/errors.h"

namespace orb {

enum class PlacementStrategy {
  PACK,           // as few nodes as possible
  SPREAD,         // different nodes where possible
  STRICT_PACK,    // all bundles on one node, or wait
  STRICT_SPREAD,  // every bundle on its own node, or wait
};

struct PlacementGroupCreationOptions {
  std::string name;
  std::vector<std::map<std::string, double>> bundles;
  PlacementStrategy strategy = PlacementStrategy::PACK;
};

namespace internal {
std::string CreatePlacementGroup(const std::string& name, const std::vector<std::map<std::string, double>>& bundles,
                                 int strategy);
bool WaitPlacementGroupReady(const std::string& id_hex, int64_t timeout_ms);
void RemovePlacementGroup(const std::string& id_hex);
}  // namespace internal

class PlacementGroup {
 public:
  PlacementGroup() = default;
  PlacementGroup(std::string id, PlacementGroupCreationOptions options)
      : id_(std::move(id)), options_(std::move(options)) {}

  // Hex ID.
  const std::string& GetID() const { return id_; }
  const std::string& GetName() const { return options_.name; }
  const std::vector<std::map<std::string, double>>& GetBundles() const { return options_.bundles; }
  PlacementStrategy GetStrategy() const { return options_.strategy; }
  bool Empty() const { return id_.empty(); }

  // True once every bundle is reserved; false if `timeout_seconds` pass first. A group
  // that does not fit now stays pending and is placed when resources free up.
  bool Wait(int timeout_seconds) const {
    return internal::WaitPlacementGroupReady(id_, static_cast<int64_t>(timeout_seconds) * 1000);
  }

 private:
  std::string id_;
  PlacementGroupCreationOptions options_;
};

// Reserves the bundles (asynchronously: Wait() for them). A bundle with no resources or
// a non-positive amount is an orb::Error here.
inline PlacementGroup CreatePlacementGroup(const PlacementGroupCreationOptions& options) {
  return PlacementGroup(internal::CreatePlacementGroup(options.name, options.bundles, static_cast<int>(options.strategy)),
                        options);
}

// Frees the bundles; tasks and actors running in them are killed.
inline void RemovePlacementGroup(const std::string& placement_group_id) {
  internal::RemovePlacementGroup(placement_group_id);
}

}  // namespace orb

// Resource amounts (CPU, GPU, memory, custom names) in fixed point, so that fractional
// requests add and subtract without drift: 0.1 + 0.2 == 0.3 here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace orb {

class ResourceSet {
 public:
  static constexpr int64_t kUnit = 10000;  // amounts are stored in 1/10000ths
  // The largest amount of one resource (100 TB of memory in bytes); Validate refuses
  // more, and arithmetic saturates rather than overflow.
  static constexpr double kMaxAmount = 1e14;

  ResourceSet() = default;
  static ResourceSet FromMap(const std::map<std::string, double>& amounts);
  template <class Map>
  static ResourceSet FromAnyMap(const Map& amounts) {
    std::map<std::string, double> m(amounts.begin(), amounts.end());
    return FromMap(m);
  }
  // Parses a JSON object such as {"CPU": 2, "accel": 0.5}; rejects negative, NaN or
  // non-numeric amounts with an InvalidArgument naming the resource.
  static absl::StatusOr<ResourceSet> ParseJson(const std::string& json);
  // Checks amounts a caller asked for: finite and not negative.
  static absl::Status Validate(const std::map<std::string, double>& amounts);

  std::map<std::string, double> ToMap() const;
  double Get(const std::string& name) const;
  void Set(const std::string& name, double amount);

  // True when every amount in `request` is available here.
  bool Contains(const ResourceSet& request) const;
  void Add(const ResourceSet& other);
  void Subtract(const ResourceSet& other);
  bool IsEmpty() const { return amounts_.empty(); }
  std::string ToString() const;
  bool operator==(const ResourceSet& o) const { return amounts_ == o.amounts_; }

  // Resource names are interned: each gets a small integer ID for this process's life,
  // so that the scheduler's hot loops compare integers, not strings.
  static int IdOf(const std::string& name);
  // The amount of resource `id` (from IdOf), without touching the name table.
  double GetById(int id) const;
  // Calls f(id, amount) for every non-zero amount, without copying.
  template <class F>
  void ForEachId(F f) const {
    for (const auto& [id, fixed] : amounts_) f(id, static_cast<double>(fixed) / kUnit);
  }

 private:
  std::vector<std::pair<int, int64_t>>::iterator Find(int id);
  // Sorted by ID; zero amounts are not stored.
  std::vector<std::pair<int, int64_t>> amounts_;
};

// Placement group resources. A committed bundle `index` of group `pg_hex` adds, for each
// resource R it holds, "R_group_<index>_<pg_hex>" and "R_group_<pg_hex>", plus
// "bundle_group_<index>_<pg_hex>" and "bundle_group_<pg_hex>" (1000 each) that place
// tasks needing no other resource. A task in the group asks for the renamed resources
// (index -1: any bundle) and a thousandth of the bundle marker.
std::string PlacementGroupResourceName(const std::string& resource, const std::string& pg_hex, int bundle_index);
inline constexpr double kBundleMarkerAmount = 1000;
inline constexpr double kBundleMarkerRequest = 0.001;

// Node resources, as Ray's: every node offers 1 of "node:<its address>", the head node 1
// of "node:__internal_head__"; work asks for a sliver (0.001) to be pinned there. The
// autoscaler never adds a node for them.
inline constexpr char kNodeResourcePrefix[] = "node:";
inline constexpr char kHeadNodeResource[] = "node:__internal_head__";
inline bool IsNodeResource(const std::string& name) { return name.rfind(kNodeResourcePrefix, 0) == 0; }

}  // namespace orb

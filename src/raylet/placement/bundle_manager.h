// This node's share of placement groups: bundles prepared and committed here by the
// GCS's two-phase reservation.
//
// Prepare takes a bundle's resources out of what leases may use. Commit turns them into
// the group's resources (PlacementGroupResourceName), which tasks and actors of the
// group lease like any other resource, so scheduling needs nothing special. Return
// kills what runs in the bundle and gives the original resources back. A bundle
// prepared but not committed within `prepare_timeout` (its GCS died mid-way) is
// returned on its own. Runs on the raylet's loop.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>

#include "common/event_loop.h"
#include "common/resources.h"
#include "raylet/lease_granter.h"

namespace orb {

class BundleManager {
 public:
  BundleManager(LeaseGranter* granter, EventLoop* loop, std::chrono::milliseconds prepare_timeout);

  bool Prepare(const std::string& pg_hex, int index, const ResourceSet& resources);
  bool Commit(const std::string& pg_hex, int index);
  void Return(const std::string& pg_hex, int index);

 private:
  struct Bundle {
    ResourceSet resources;
    bool committed = false;
    uint64_t epoch = 0;
  };
  using Key = std::pair<std::string, int>;
  static ResourceSet GroupResources(const std::string& pg_hex, int index, const ResourceSet& resources);

  LeaseGranter* granter_;
  EventLoop* loop_;
  std::chrono::milliseconds prepare_timeout_;
  std::map<Key, Bundle> bundles_;
  uint64_t next_epoch_ = 1;
};

}  // namespace orb

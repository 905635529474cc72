#include "raylet/placement/bundle_manager.h"

#include <spdlog/spdlog.h>

namespace orb {

BundleManager::BundleManager(LeaseGranter* granter, EventLoop* loop, std::chrono::milliseconds prepare_timeout)
    : granter_(granter), loop_(loop), prepare_timeout_(prepare_timeout) {}

ResourceSet BundleManager::GroupResources(const std::string& pg_hex, int index, const ResourceSet& resources) {
  std::map<std::string, double> group;
  for (const auto& [name, amount] : resources.ToMap()) {
    group[PlacementGroupResourceName(name, pg_hex, index)] += amount;
    group[PlacementGroupResourceName(name, pg_hex, -1)] += amount;
  }
  group[PlacementGroupResourceName("bundle", pg_hex, index)] = kBundleMarkerAmount;
  group[PlacementGroupResourceName("bundle", pg_hex, -1)] = kBundleMarkerAmount;
  return ResourceSet::FromMap(group);
}

bool BundleManager::Prepare(const std::string& pg_hex, int index, const ResourceSet& resources) {
  Key key{pg_hex, index};
  if (bundles_.count(key)) return true;  // a retried prepare
  if (!granter_->Reserve(resources)) return false;
  uint64_t epoch = next_epoch_++;
  bundles_[key] = Bundle{resources, false, epoch};
  loop_->RunAfter(prepare_timeout_, [this, key, epoch] {
    auto it = bundles_.find(key);
    if (it == bundles_.end() || it->second.committed || it->second.epoch != epoch) return;
    spdlog::warn("bundle {} of placement group {} was prepared but never committed; returning it", key.second,
                 key.first.substr(0, 12));
    Return(key.first, key.second);
  });
  return true;
}

bool BundleManager::Commit(const std::string& pg_hex, int index) {
  auto it = bundles_.find({pg_hex, index});
  if (it == bundles_.end()) return false;  // expired, or never prepared here
  if (it->second.committed) return true;
  it->second.committed = true;
  granter_->AddCapacity(GroupResources(pg_hex, index, it->second.resources));
  return true;
}

void BundleManager::Return(const std::string& pg_hex, int index) {
  auto it = bundles_.find({pg_hex, index});
  if (it == bundles_.end()) return;
  Bundle bundle = it->second;
  bundles_.erase(it);
  if (bundle.committed) {
    // What runs in this bundle goes with it: leases holding its resources end first,
    // so that the capacity removed below is all free.
    int killed = granter_->KillLeasesHolding("_group_" + std::to_string(index) + "_" + pg_hex);
    bool last_here = true;
    for (const auto& [key, other] : bundles_) last_here = last_here && key.first != pg_hex;
    if (last_here) killed += granter_->KillLeasesHolding("_group_" + pg_hex);
    if (killed > 0) spdlog::info("placement group {} bundle {} returned; {} lease(s) ended", pg_hex.substr(0, 12), index, killed);
    granter_->RemoveCapacity(GroupResources(pg_hex, index, bundle.resources));
  }
  granter_->Unreserve(bundle.resources);
}

}  // namespace orb

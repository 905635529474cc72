// CoreWorker's placement group calls: create (validated here, placed by the GCS), wait
// until every bundle is reserved, remove.
#include <cmath>

#include "core/core_worker.h"
#include "core/task_options_check.h"

namespace orb {

namespace {

internal::PlacementGroupData FromInfo(const rpc::PlacementGroupInfo& pg) {
  internal::PlacementGroupData data;
  data.id = PlacementGroupID::FromBinary(pg.placement_group_id()).Hex();
  data.options.name = pg.name();
  data.options.strategy = static_cast<PlacementStrategy>(pg.strategy());
  data.options.lifetime = pg.detached() ? ActorLifetime::DETACHED : ActorLifetime::NON_DETACHED;
  for (const auto& bundle : pg.bundles()) data.options.bundles.emplace_back(bundle.resources().begin(), bundle.resources().end());
  switch (pg.state()) {
    case rpc::PlacementGroupInfo::PENDING: data.state = PENDING; break;
    case rpc::PlacementGroupInfo::CREATED: data.state = CREATED; break;
    case rpc::PlacementGroupInfo::REMOVED: data.state = REMOVED; break;
    case rpc::PlacementGroupInfo::RESCHEDULING: data.state = RESCHEDULING; break;
    default: data.state = UNRECOGNIZED;
  }
  return data;
}

}  // namespace

std::string CoreWorker::CreatePlacementGroup(const PlacementGroupCreationOptions& options) {
  CheckPlacementGroupOptions(options);
  const auto& bundles = options.bundles;
  int strategy = static_cast<int>(options.strategy);
  rpc::CreatePlacementGroupRequest request;
  rpc::PlacementGroupInfo* pg = request.mutable_placement_group();
  PlacementGroupID id = PlacementGroupID::FromRandom();
  pg->set_placement_group_id(id.Binary());
  pg->set_name(options.name);
  pg->set_namespace_(options_.ray_namespace);
  pg->set_detached(options.lifetime == ActorLifetime::DETACHED);
  pg->set_strategy(static_cast<rpc::PlacementGroupInfo::Strategy>(strategy));
  pg->set_job_id(options_.job_id.Binary());
  for (size_t i = 0; i < bundles.size(); ++i) {
    rpc::Bundle* bundle = pg->add_bundles();
    bundle->set_index(static_cast<int32_t>(i));
    for (const auto& [resource, amount] : bundles[i]) (*bundle->mutable_resources())[resource] = amount;
  }
  auto reply = CallGcs<rpc::CreatePlacementGroupReply>(ORB_RPC(CreatePlacementGroup), request,
                                                      "cannot create placement group");
  if (reply.created()) {
    std::lock_guard<std::mutex> lock(placement_groups_mu_);
    placement_groups_created_.insert(id.Hex());
  }
  return id.Hex();
}

bool CoreWorker::WaitPlacementGroupReady(const std::string& id_hex, int64_t timeout_ms) {
  PlacementGroupID id = PlacementGroupID::FromHex(id_hex);
  if (id.IsNil()) throw Error("placement group ID '" + id_hex + "' is not 32 hex digits");
  {
    std::lock_guard<std::mutex> lock(placement_groups_mu_);
    if (placement_groups_created_.count(id.Hex())) return true;  // placed before Create returned
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max<int64_t>(0, timeout_ms));
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    rpc::GetPlacementGroupRequest request;
    request.set_placement_group_id(id.Binary());
    request.set_until_ready(true);
    request.set_wait_ms(static_cast<int32_t>(std::clamp<int64_t>(left.count(), 0, 30000)));
    auto reply = CallGcs<rpc::GetPlacementGroupReply>(ORB_RPC(GetPlacementGroup), request,
                                                      "cannot reach the GCS for placement group " + id_hex,
                                                      std::chrono::milliseconds(request.wait_ms() + 5000));
    if (!reply.found()) throw Error("no placement group " + id_hex);
    const auto& pg = reply.placement_group();
    if (pg.state() == rpc::PlacementGroupInfo::CREATED) return true;
    if (pg.state() == rpc::PlacementGroupInfo::REMOVED) return false;
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
}

void CoreWorker::RemovePlacementGroup(const std::string& id_hex) {
  PlacementGroupID id = PlacementGroupID::FromHex(id_hex);
  if (id.IsNil()) throw Error("placement group ID '" + id_hex + "' is not 32 hex digits");
  {
    std::lock_guard<std::mutex> lock(placement_groups_mu_);
    placement_groups_created_.erase(id.Hex());
  }
  rpc::RemovePlacementGroupRequest request;
  request.set_placement_group_id(id.Binary());
  CallGcs<rpc::RemovePlacementGroupReply>(ORB_RPC(RemovePlacementGroup), request,
                                          "cannot remove placement group " + id_hex);
}

bool CoreWorker::LookUpPlacementGroup(const std::string& id_hex, const std::string& name,
                                      internal::PlacementGroupData* out) {
  rpc::GetPlacementGroupRequest request;
  if (!id_hex.empty()) {
    PlacementGroupID id = PlacementGroupID::FromHex(id_hex);
    if (id.IsNil()) throw Error("placement group ID '" + id_hex + "' is not 32 hex digits");
    request.set_placement_group_id(id.Binary());
  } else {
    request.set_name(name);
    request.set_namespace_(options_.ray_namespace);
  }
  auto reply = CallGcs<rpc::GetPlacementGroupReply>(ORB_RPC(GetPlacementGroup), request,
                                                    "cannot look up placement group " + (id_hex.empty() ? "'" + name + "'" : id_hex));
  if (!reply.found()) return false;
  *out = FromInfo(reply.placement_group());
  return true;
}

std::vector<internal::PlacementGroupData> CoreWorker::ListPlacementGroups() {
  auto reply = CallGcs<rpc::ListPlacementGroupsReply>(ORB_RPC(ListPlacementGroups), rpc::ListPlacementGroupsRequest(),
                                                      "cannot list placement groups");
  std::vector<internal::PlacementGroupData> groups;
  for (const auto& pg : reply.placement_groups()) groups.push_back(FromInfo(pg));
  return groups;
}

}  // namespace orb

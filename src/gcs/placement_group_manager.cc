#include "gcs/placement_group_manager.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "common/id.h"
#include "common/resources.h"

namespace orb::gcs {
namespace {

constexpr char kPlacementGroupTable[] = "placement_group";

std::string Short(const std::string& id) { return PlacementGroupID::FromBinary(id).Hex().substr(0, 12); }

grpc::Status Invalid(const std::string& message) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message); }

}  // namespace

PlacementGroupManager::PlacementGroupManager(TableStore* store, EventLoop* loop, PlacementGroupAccess access,
                                             std::string token, std::chrono::milliseconds retry_delay)
    : store_(store),
      loop_(loop),
      access_(std::move(access)),
      retry_delay_(retry_delay),
      raylets_(std::move(token)),
      waiters_(
          loop,
          [](rpc::GetPlacementGroupReply* reply, const rpc::PlacementGroupInfo& pg) {
            reply->set_found(true);
            *reply->mutable_placement_group() = pg;
          },
          [this](const std::string& id) -> const rpc::PlacementGroupInfo* {
            auto it = groups_.find(id);
            return it == groups_.end() ? nullptr : &it->second;
          }) {}

PlacementGroupManager::~PlacementGroupManager() { raylets_.Drain(std::chrono::seconds(2)); }

absl::Status PlacementGroupManager::Load() {
  auto rows = store_->Scan(kPlacementGroupTable, "");
  if (!rows.ok()) return rows.status();
  for (const auto& [key, value] : *rows) {
    rpc::PlacementGroupInfo pg;
    if (!pg.ParseFromString(value)) return absl::DataLossError("corrupt placement group record in GCS storage");
    groups_[pg.placement_group_id()] = std::move(pg);
  }
  return absl::OkStatus();
}

void PlacementGroupManager::Start() {
  std::vector<std::string> ids;
  for (const auto& [id, pg] : groups_) ids.push_back(id);
  for (const auto& id : ids) {
    rpc::PlacementGroupInfo& pg = groups_[id];
    for (auto& bundle : *pg.mutable_bundles()) {
      if (!bundle.node_id().empty() && access_.raylet_of(bundle.node_id()).empty()) {
        bundle.clear_node_id();
        if (pg.state() == rpc::PlacementGroupInfo::CREATED) pg.set_state(rpc::PlacementGroupInfo::RESCHEDULING);
      }
    }
    if (pg.state() != rpc::PlacementGroupInfo::CREATED && pg.state() != rpc::PlacementGroupInfo::REMOVED) Schedule(id);
  }
}

void PlacementGroupManager::HandleCreatePlacementGroup(const rpc::CreatePlacementGroupRequest& req,
                                                       rpc::CreatePlacementGroupReply* reply, SendReply send) {
  const rpc::PlacementGroupInfo& in = req.placement_group();
  if (PlacementGroupID::FromBinary(in.placement_group_id()).IsNil()) {
    return send(Invalid("placement_group_id must be 16 bytes"));
  }
  if (in.bundles_size() == 0) return send(Invalid("a placement group needs at least one bundle"));
  for (int i = 0; i < in.bundles_size(); ++i) {
    const auto& resources = in.bundles(i).resources();
    if (resources.empty()) return send(Invalid("bundle " + std::to_string(i) + " has no resources"));
    if (auto valid = ResourceSet::Validate({resources.begin(), resources.end()}); !valid.ok()) {
      return send(Invalid("bundle " + std::to_string(i) + ": " + std::string(valid.message())));
    }
    for (const auto& [name, amount] : resources) {
      if (!(amount > 0)) {
        return send(Invalid("bundle " + std::to_string(i) + " asks for " + std::to_string(amount) + " " + name +
                            "; amounts must be positive"));
      }
    }
  }
  if (groups_.count(in.placement_group_id())) return send(grpc::Status::OK);  // a retried create
  if (!in.name().empty() && FindNamed(in.namespace_(), in.name())) {
    return send(grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                             "a placement group named '" + in.name() + "' already exists in namespace '" +
                                 in.namespace_() + "' (names are unique until the group is removed)"));
  }
  rpc::PlacementGroupInfo pg = in;
  pg.set_state(rpc::PlacementGroupInfo::PENDING);
  pg.set_version(0);
  for (int i = 0; i < pg.bundles_size(); ++i) {
    pg.mutable_bundles(i)->set_index(i);
    pg.mutable_bundles(i)->clear_node_id();
  }
  std::string id = pg.placement_group_id();
  groups_[id] = std::move(pg);
  if (absl::Status persisted = Changed(groups_[id]); !persisted.ok()) {
    groups_.erase(id);  // not recorded: not created
    return send(ToGrpc(persisted));
  }
  pending_creates_[id] = PendingCreate{reply, std::move(send)};
  loop_->RunAfter(std::chrono::seconds(1), [this, id] { AnswerCreate(id); });  // whatever happens meanwhile
  Schedule(id);
}

void PlacementGroupManager::AnswerCreate(const std::string& pg_id) {
  auto it = pending_creates_.find(pg_id);
  if (it == pending_creates_.end()) return;
  PendingCreate pending = std::move(it->second);
  pending_creates_.erase(it);
  auto pg = groups_.find(pg_id);
  pending.reply->set_created(pg != groups_.end() && pg->second.state() == rpc::PlacementGroupInfo::CREATED);
  pending.send(grpc::Status::OK);
}

void PlacementGroupManager::Schedule(const std::string& pg_id) {
  auto it = groups_.find(pg_id);
  if (it == groups_.end() || it->second.state() == rpc::PlacementGroupInfo::REMOVED) return;
  rpc::PlacementGroupInfo& pg = it->second;
  std::vector<BundleToPlace> missing;
  std::vector<std::string> used;
  for (const auto& bundle : pg.bundles()) {
    if (bundle.node_id().empty()) {
      missing.push_back({bundle.index(), ResourceSet::FromAnyMap(bundle.resources())});
    } else {
      used.push_back(bundle.node_id());
    }
  }
  Attempt attempt;
  attempt.id = next_attempt_++;
  if (missing.empty()) return AnswerCreate(pg_id);
  auto placement = PlaceBundles(pg.strategy(), missing, used, access_.live_nodes());
  if (!placement) {
    std::string reason = "no set of live nodes has room for the bundles under " +
                         rpc::PlacementGroupInfo::Strategy_Name(pg.strategy());
    if (pg.pending_reason() != reason) {
      pg.set_pending_reason(reason);
      (void)Changed(pg);
    }
    attempts_[pg_id] = attempt;
    AnswerCreate(pg_id);  // pending: the creator waits with Wait
    return RetryLater(pg_id, attempt.id);
  }
  attempt.placement = std::move(*placement);
  attempt.replies_left = static_cast<int>(attempt.placement.size());
  attempt.one_phase = std::all_of(attempt.placement.begin(), attempt.placement.end(),
                                  [&](const auto& entry) { return entry.second == attempt.placement.begin()->second; });
  attempts_[pg_id] = attempt;
  for (const auto& [index, node] : attempts_[pg_id].placement) {
    rpc::PrepareBundleRequest request;
    request.set_placement_group_id(pg_id);
    request.set_bundle_index(index);
    *request.mutable_resources() = pg.bundles(index).resources();
    request.set_commit(attempts_[pg_id].one_phase);
    uint64_t id = attempt.id;
    RayletClient(node, access_.raylet_of(node))
        ->Call<rpc::PrepareBundleReply>(ORB_RPC(PrepareBundle), request,
                                        [this, pg_id, id](const absl::Status& s, rpc::PrepareBundleReply&& reply) {
                                          bool ok = s.ok() && reply.prepared();
                                          loop_->Post([this, pg_id, id, ok] { OnPrepared(pg_id, id, ok); });
                                        });
  }
}

void PlacementGroupManager::RetryLater(const std::string& pg_id, uint64_t attempt) {
  loop_->RunAfter(retry_delay_, [this, pg_id, attempt] {
    auto it = attempts_.find(pg_id);
    if (it != attempts_.end() && it->second.id == attempt) Schedule(pg_id);
  });
}

PlacementGroupManager::Attempt* PlacementGroupManager::CountReply(const std::string& pg_id, uint64_t attempt_id,
                                                                  bool ok) {
  auto it = attempts_.find(pg_id);
  if (it == attempts_.end() || it->second.id != attempt_id) return nullptr;  // removed meanwhile: already returned
  Attempt& attempt = it->second;
  attempt.all_ok = attempt.all_ok && ok;
  if (--attempt.replies_left > 0) return nullptr;
  if (!attempt.all_ok) {
    // The phase failed somewhere (a view was stale): undo it everywhere, try again.
    ReturnBundles(pg_id, attempt.placement);
    AnswerCreate(pg_id);
    RetryLater(pg_id, attempt_id);
    return nullptr;
  }
  return &attempt;
}

void PlacementGroupManager::OnPrepared(const std::string& pg_id, uint64_t attempt_id, bool ok) {
  Attempt* attempt = CountReply(pg_id, attempt_id, ok);
  if (!attempt) return;
  if (attempt->one_phase) return Placed(pg_id);
  attempt->replies_left = static_cast<int>(attempt->placement.size());
  for (const auto& [index, node] : attempt->placement) {
    rpc::CommitBundleRequest request;
    request.set_placement_group_id(pg_id);
    request.set_bundle_index(index);
    RayletClient(node, access_.raylet_of(node))
        ->Call<rpc::CommitBundleReply>(ORB_RPC(CommitBundle), request,
                                       [this, pg_id, attempt_id](const absl::Status& s, rpc::CommitBundleReply&& reply) {
                                         bool ok = s.ok() && reply.committed();
                                         loop_->Post([this, pg_id, attempt_id, ok] { OnCommitted(pg_id, attempt_id, ok); });
                                       });
  }
}

void PlacementGroupManager::OnCommitted(const std::string& pg_id, uint64_t attempt_id, bool ok) {
  if (CountReply(pg_id, attempt_id, ok)) Placed(pg_id);
}

void PlacementGroupManager::Placed(const std::string& pg_id) {
  auto it = attempts_.find(pg_id);
  rpc::PlacementGroupInfo& pg = groups_[pg_id];
  for (const auto& [index, node] : it->second.placement) pg.mutable_bundles(index)->set_node_id(node);
  pg.set_state(rpc::PlacementGroupInfo::CREATED);
  pg.clear_pending_reason();
  attempts_.erase(it);
  (void)Changed(pg);
  AnswerCreate(pg_id);
}

void PlacementGroupManager::ReturnBundles(const std::string& pg_id, const std::map<int, std::string>& placement) {
  for (const auto& [index, node] : placement) {
    std::string raylet = access_.raylet_of(node);
    if (raylet.empty()) continue;  // the node died, and the bundle with it
    rpc::ReturnBundleRequest request;
    request.set_placement_group_id(pg_id);
    request.set_bundle_index(index);
    RayletClient(node, raylet)->Call<rpc::ReturnBundleReply>(
        ORB_RPC(ReturnBundle), request, [](const absl::Status&, rpc::ReturnBundleReply&&) {}, CallOptions::Retried());
  }
}

std::shared_ptr<RpcClient<rpc::RayletService>> PlacementGroupManager::RayletClient(const std::string& node_id,
                                                                                 const std::string& raylet) {
  static const std::set<std::string, std::less<>> kRouted = {"PrepareBundle", "CommitBundle", "ReturnBundle"};
  return GetRouted(raylets_, raylet, access_.call_stream_of ? access_.call_stream_of(node_id) : "", kRouted);
}

void PlacementGroupManager::HandleRemovePlacementGroup(const rpc::RemovePlacementGroupRequest& req,
                                                       rpc::RemovePlacementGroupReply*, SendReply send) {
  auto it = groups_.find(req.placement_group_id());
  if (it == groups_.end()) {
    return send(grpc::Status(grpc::StatusCode::NOT_FOUND,
                             "no placement group " + PlacementGroupID::FromBinary(req.placement_group_id()).Hex()));
  }
  send(ToGrpc(Remove(it->second)));
}

absl::Status PlacementGroupManager::Remove(rpc::PlacementGroupInfo& pg) {
  if (pg.state() == rpc::PlacementGroupInfo::REMOVED) return absl::OkStatus();
  std::map<int, std::string> placed;
  for (const auto& bundle : pg.bundles()) {
    if (!bundle.node_id().empty()) placed[bundle.index()] = bundle.node_id();
  }
  std::string id = pg.placement_group_id();
  auto attempt = attempts_.find(id);
  if (attempt != attempts_.end()) {
    // A reservation in flight: return what it may have prepared; its replies are ignored.
    for (const auto& [index, node] : attempt->second.placement) placed[index] = node;
    attempts_.erase(attempt);
  }
  ReturnBundles(id, placed);
  pg.set_state(rpc::PlacementGroupInfo::REMOVED);
  absl::Status persisted = Changed(pg);
  AnswerCreate(id);
  if (access_.on_removed) access_.on_removed(id);
  return persisted;
}

void PlacementGroupManager::OnJobFinished(const std::string& job_id) {
  for (auto& [id, pg] : groups_) {
    if (pg.job_id() != job_id || pg.detached() || pg.state() == rpc::PlacementGroupInfo::REMOVED) continue;
    spdlog::info("placement group {} ends with its job", Short(id));
    (void)Remove(pg);
  }
}

const rpc::PlacementGroupInfo* PlacementGroupManager::FindNamed(const std::string& ns, const std::string& name) const {
  for (const auto& [id, pg] : groups_) {
    if (pg.name() == name && pg.namespace_() == ns && pg.state() != rpc::PlacementGroupInfo::REMOVED) return &pg;
  }
  return nullptr;
}

void PlacementGroupManager::OnNodeDead(const std::string& node_id) {
  for (auto& [id, pg] : groups_) {
    if (pg.state() == rpc::PlacementGroupInfo::REMOVED) continue;
    bool lost = false;
    for (auto& bundle : *pg.mutable_bundles()) {
      if (bundle.node_id() == node_id) {
        bundle.clear_node_id();
        lost = true;
      }
    }
    if (!lost) continue;
    spdlog::warn("placement group {} lost bundles with node {}; rescheduling them", Short(id),
                 NodeID::FromBinary(node_id).Hex().substr(0, 12));
    if (pg.state() == rpc::PlacementGroupInfo::CREATED) pg.set_state(rpc::PlacementGroupInfo::RESCHEDULING);
    (void)Changed(pg);
    if (!attempts_.count(id)) Schedule(id);
  }
}

absl::Status PlacementGroupManager::Changed(rpc::PlacementGroupInfo& pg) {
  pg.set_version(pg.version() + 1);
  absl::Status persisted = store_->Put(kPlacementGroupTable, pg.placement_group_id(), pg.SerializeAsString());
  if (!persisted.ok()) {
    spdlog::error("cannot persist placement group {}: {}", Short(pg.placement_group_id()), persisted.ToString());
  }
  waiters_.Notify(pg.placement_group_id(), pg);
  return persisted;
}

void PlacementGroupManager::HandleGetPlacementGroup(const rpc::GetPlacementGroupRequest& req,
                                                    rpc::GetPlacementGroupReply* reply, SendReply send) {
  if (req.placement_group_id().empty()) {
    const rpc::PlacementGroupInfo* named = FindNamed(req.namespace_(), req.name());
    reply->set_found(named != nullptr);
    if (named) *reply->mutable_placement_group() = *named;
    return send(grpc::Status::OK);
  }
  auto it = groups_.find(req.placement_group_id());
  if (it == groups_.end()) {
    reply->set_found(false);
    return send(grpc::Status::OK);
  }
  int64_t after = req.after_version();
  bool until_ready = req.until_ready();
  waiters_.Answer(
      req.placement_group_id(), it->second,
      [after, until_ready](const rpc::PlacementGroupInfo& pg) { return Satisfies(pg, after, until_ready); }, reply,
      std::move(send), std::chrono::milliseconds(req.wait_ms()));
}

bool PlacementGroupManager::Satisfies(const rpc::PlacementGroupInfo& pg, int64_t after_version, bool until_ready) {
  if (until_ready) {
    return pg.state() == rpc::PlacementGroupInfo::CREATED || pg.state() == rpc::PlacementGroupInfo::REMOVED;
  }
  return pg.version() > after_version;
}

std::map<std::string, int64_t> PlacementGroupManager::CountByState() const {
  std::map<std::string, int64_t> counts;
  for (int s = rpc::PlacementGroupInfo::State_MIN; s <= rpc::PlacementGroupInfo::State_MAX; ++s) {
    counts[rpc::PlacementGroupInfo::State_Name(static_cast<rpc::PlacementGroupInfo::State>(s))] = 0;
  }
  for (const auto& [id, pg] : groups_) ++counts[rpc::PlacementGroupInfo::State_Name(pg.state())];
  return counts;
}

void PlacementGroupManager::HandleListPlacementGroups(const rpc::ListPlacementGroupsRequest&,
                                                      rpc::ListPlacementGroupsReply* reply, SendReply send) {
  for (const auto& [id, pg] : groups_) *reply->add_placement_groups() = pg;
  send(grpc::Status::OK);
}

}  // namespace orb::gcs

// The GCS's placement groups: bundles of resources reserved together across nodes.
//
// Create records the group PENDING and schedules it: PlaceBundles picks a node per
// bundle from the nodes' gossiped available resources, then a two-phase reservation
// runs on the raylets — PrepareBundle on every chosen node, and CommitBundle on all of
// them only if every prepare succeeded; otherwise the prepared bundles are returned and
// the group waits (PENDING, with the reason) and is tried again shortly, without
// blocking anything else. When one node holds every bundle there is nothing to agree
// on: its PrepareBundle commits at once. The Create reply waits for the first attempt
// (at most a second) and says whether the group is already placed, so a creator whose
// group fits at once needs no Wait round trip. Remove returns every bundle (its raylet kills what runs in
// it) and tells `on_removed` (the actor manager ends the group's actors). A node that
// dies takes its bundles with it: the group is RESCHEDULING until those are placed
// again under the same strategy. A group ends with the job that created it (as in
// Ray) unless it is detached. Names are unique within a namespace among groups not
// removed; GetPlacementGroup finds a group by ID or by name.
//
// Changes are persisted and versioned like actors; GetPlacementGroup long-polls.
// Runs on the GCS event loop; not thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/client_pool.h"
#include "common/event_loop.h"
#include "common/rpc.h"
#include "gcs/bundle_placement.h"
#include "gcs/long_poll.h"
#include "gcs/table_store.h"
#include "gcs_service.pb.h"
#include "raylet_service.grpc.pb.h"

namespace orb::gcs {

struct PlacementGroupAccess {
  std::function<std::vector<NodeCapacity>()> live_nodes;
  std::function<std::string(const std::string& node_id)> raylet_of;  // empty when dead
  // The raylet's call stream, "ip:port" (empty: none; then gRPC).
  std::function<std::string(const std::string& node_id)> call_stream_of;
  std::function<void(const std::string& placement_group_id)> on_removed;
};

class PlacementGroupManager {
 public:
  PlacementGroupManager(TableStore* store, EventLoop* loop, PlacementGroupAccess access, std::string token,
                        std::chrono::milliseconds retry_delay = std::chrono::milliseconds(200));
  ~PlacementGroupManager();

  absl::Status Load();
  void Start();  // schedules groups that were not placed

  void HandleCreatePlacementGroup(const rpc::CreatePlacementGroupRequest& req, rpc::CreatePlacementGroupReply* reply,
                                  SendReply send);
  void HandleRemovePlacementGroup(const rpc::RemovePlacementGroupRequest& req, rpc::RemovePlacementGroupReply* reply,
                                  SendReply send);
  void HandleGetPlacementGroup(const rpc::GetPlacementGroupRequest& req, rpc::GetPlacementGroupReply* reply,
                               SendReply send);
  // How many groups are in each state (every state named, zero included), for /metrics.
  std::map<std::string, int64_t> CountByState() const;
  void HandleListPlacementGroups(const rpc::ListPlacementGroupsRequest& req, rpc::ListPlacementGroupsReply* reply,
                                 SendReply send);
  void OnNodeDead(const std::string& node_id);
  // Removes the job's groups that are not detached.
  void OnJobFinished(const std::string& job_id);
  // Answers the GetPlacementGroup calls parked here (the GCS is stopping).
  void AnswerParkedCalls() { waiters_.ExpireAll(); }

 private:
  struct Attempt {
    uint64_t id = 0;
    std::map<int, std::string> placement;  // bundle index -> node
    int replies_left = 0;
    bool all_ok = true;
    bool one_phase = false;  // every bundle on one node: prepared means committed
  };
  struct PendingCreate {
    rpc::CreatePlacementGroupReply* reply;
    SendReply send;
  };

  void Schedule(const std::string& pg_id);
  void RetryLater(const std::string& pg_id, uint64_t attempt);
  // Counts one raylet's answer in the current phase of `attempt`: the attempt once every
  // answer is in and all succeeded; when one failed, undoes the attempt everywhere and
  // tries again later; null then, and while answers are still out.
  Attempt* CountReply(const std::string& pg_id, uint64_t attempt, bool ok);
  void OnPrepared(const std::string& pg_id, uint64_t attempt, bool ok);
  void OnCommitted(const std::string& pg_id, uint64_t attempt, bool ok);
  // Every bundle is reserved: the group is CREATED.
  void Placed(const std::string& pg_id);
  // Sends the Create reply held for `pg_id`, if any, saying whether the group is placed.
  void AnswerCreate(const std::string& pg_id);
  void ReturnBundles(const std::string& pg_id, const std::map<int, std::string>& placement);
  // The client of the raylet at `raylet` (node `node_id`'s), its bundle calls routed
  // over that raylet's call stream when it serves one.
  std::shared_ptr<RpcClient<rpc::RayletService>> RayletClient(const std::string& node_id, const std::string& raylet);
  // Returns the group's bundles (its raylets kill what runs in them) and marks it REMOVED.
  absl::Status Remove(rpc::PlacementGroupInfo& pg);
  // The live group named `name` in `ns`, if any.
  const rpc::PlacementGroupInfo* FindNamed(const std::string& ns, const std::string& name) const;
  // Records the change (made in memory anyway); whether it reached storage.
  absl::Status Changed(rpc::PlacementGroupInfo& pg);
  static bool Satisfies(const rpc::PlacementGroupInfo& pg, int64_t after_version, bool until_ready);

  TableStore* store_;
  EventLoop* loop_;
  PlacementGroupAccess access_;
  std::chrono::milliseconds retry_delay_;
  ClientPool<rpc::RayletService> raylets_;
  std::map<std::string, rpc::PlacementGroupInfo> groups_;
  std::unordered_map<std::string, Attempt> attempts_;  // the reservation in progress per group
  // Create replies held until the group's first attempt has finished: a group placed at
  // once is known CREATED by its creator without a Wait round trip.
  std::unordered_map<std::string, PendingCreate> pending_creates_;
  LongPoll<rpc::PlacementGroupInfo, rpc::GetPlacementGroupReply> waiters_;
  uint64_t next_attempt_ = 1;
};

}  // namespace orb::gcs

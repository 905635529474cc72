// The GCS's actor table and actor lifecycle.
//
// An actor is registered by its creator (the owner) and scheduled here: the manager
// asks a raylet for a worker lease (the owner's node first, following spillback like a
// task), pushes the creation task (the constructor call) to the leased worker, and
// records the actor ALIVE at that worker's address. The lease is held for the actor's
// life. When the worker dies (its raylet reports it), its node dies, or Kill() asks for
// a restart, the actor is RESTARTING and scheduled again while restarts remain
// (constructor rerun), else DEAD with the reason. A constructor that throws counts as a
// failure too; with no restarts left the actor is dead with that TaskError. Actors not
// detached die when their job finishes or when the worker that created them dies.
//
// Every change is written to the TableStore before it is visible and bumps the actor's
// version; callers long-poll GetActorInfo for the version after the one they know.
// Runs on the GCS event loop; not thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/client_pool.h"
#include "common/event_loop.h"
#include "common/rpc.h"
#include "common/task_pusher.h"
#include "core_worker_service.grpc.pb.h"
#include "gcs/long_poll.h"
#include "gcs/table_store.h"
#include "gcs_service.pb.h"
#include "raylet_service.grpc.pb.h"

namespace orb::gcs {

struct ActorManagerOptions {
  std::string token;
  // How long to wait before asking again when no node can take the actor now.
  std::chrono::milliseconds retry_delay{500};
  // Dead actors kept for lookups (ListActors, a handle's last calls); older ones are
  // forgotten, in memory and storage (as Ray's maximum_gcs_destroyed_actor_cached_count).
  size_t max_dead_actors = 10000;
};

// What the manager needs to know about nodes, from the node table.
struct NodeDirectoryAccess {
  // The raylet address of a live node, or empty when the node is dead or unknown.
  std::function<std::string(const std::string& node_id)> raylet_of;
  // A live raylet's address, each call the next in turn; empty when none is live.
  std::function<std::string()> next_raylet;
  // The call stream ("ip:port") of the live raylet at `raylet_address`, or empty.
  std::function<std::string(const std::string& raylet_address)> call_stream_at;
};

class ActorManager {
 public:
  ActorManager(TableStore* store, EventLoop* loop, NodeDirectoryAccess nodes, ActorManagerOptions options);
  ~ActorManager();

  absl::Status Load();
  // Schedules actors that were pending or restarting, fails those on dead nodes.
  void Start();

  void HandleRegisterActor(const rpc::RegisterActorRequest& req, rpc::RegisterActorReply* reply, SendReply send);
  void HandleGetActorInfo(const rpc::GetActorInfoRequest& req, rpc::GetActorInfoReply* reply, SendReply send);
  void HandleGetNamedActor(const rpc::GetNamedActorRequest& req, rpc::GetNamedActorReply* reply, SendReply send);
  void HandleKillActor(const rpc::KillActorRequest& req, rpc::KillActorReply* reply, SendReply send);
  // A drained node's actors restart elsewhere, not counted as failures (all or none).
  void HandleRelocateActors(const rpc::RelocateActorsRequest& req, rpc::RelocateActorsReply* reply, SendReply send);
  void HandleListActors(const rpc::ListActorsRequest& req, rpc::ListActorsReply* reply, SendReply send);
  void HandleReportWorkerFailure(const rpc::ReportWorkerFailureRequest& req, rpc::ReportWorkerFailureReply* reply,
                                 SendReply send);

  // The class of the actor that the worker `worker_id` (binary) hosts; "" for none.
  std::string ClassOfWorker(const std::string& worker_id) const;
  // How many actors are in each state (every state named, zero included), for /metrics.
  std::map<std::string, int64_t> CountByState() const;

  void OnNodeDead(const std::string& node_id);
  void OnJobFinished(const std::string& job_id);
  // Answers the GetActorInfo calls parked here (the GCS is stopping).
  void AnswerParkedCalls() { waiters_.ExpireAll(); }
  // The group's bundles are gone: its actors end (no restart).
  void OnPlacementGroupRemoved(const std::string& placement_group_id);

 private:
  rpc::ActorInfo* Find(const std::string& actor_id);
  void Schedule(const std::string& actor_id);
  void RequestLease(const std::string& actor_id, uint64_t attempt, const std::string& raylet, bool spilled);
  // The client of the raylet at `address`, its lease calls over the raylet's call stream.
  std::shared_ptr<RpcClient<rpc::RayletService>> Raylet(const std::string& address);
  void OnLeaseReply(const std::string& actor_id, uint64_t attempt, const std::string& raylet,
                    const absl::Status& status, rpc::RequestWorkerLeaseReply reply);
  void PushCreation(const std::string& actor_id, uint64_t attempt);
  void OnCreationReply(const std::string& actor_id, uint64_t attempt, const absl::Status& status,
                       rpc::PushTasksReply reply);
  void RetryLater(const std::string& actor_id, uint64_t attempt);
  // The actor's process is gone or must go: restart while restarts remain, else dead.
  // These three return whether the change reached storage (it is made in memory anyway).
  absl::Status OnFailure(rpc::ActorInfo& actor, const std::string& reason, rpc::ErrorType type, bool may_restart);
  absl::Status MarkDead(rpc::ActorInfo& actor, const std::string& reason, rpc::ErrorType type);
  // Gives the actor's lease back; its raylet kills the worker.
  void ReleaseWorker(rpc::ActorInfo& actor);
  // The worker `worker_id` (binary) died: the actors it created that are not detached
  // die with it, as in Ray (nothing is left to call them or end them).
  absl::Status EndOrphansOf(const std::string& worker_id);
  // Forgets the oldest dead actors beyond options_.max_dead_actors.
  void ForgetOldDead();
  // Persists, bumps the version, and answers waiters.
  absl::Status Changed(rpc::ActorInfo& actor);
  // After a restart: asks the raylets which of the actors recorded ALIVE still have a
  // running worker, and fails (restarts) the others.
  void VerifyAliveActors(int attempts_left);
  static constexpr int kVerifyAttempts = 5;
  static constexpr std::chrono::milliseconds kVerifyRetry{1000};
  static std::string NameKey(const std::string& ns, const std::string& name) { return ns + '\0' + name; }

  TableStore* store_;
  EventLoop* loop_;
  NodeDirectoryAccess nodes_;
  ActorManagerOptions options_;
  ClientPool<rpc::RayletService> raylets_;
  ClientPool<rpc::CoreWorkerService> workers_;
  ClientPoolOf<CallStreamClient> worker_streams_;  // creation tasks to workers that serve a call stream
  TaskPusher pusher_;
  std::map<std::string, rpc::ActorInfo> actors_;
  std::unordered_map<std::string, std::string> named_;      // namespace\0name -> actor ID, live actors only
  std::unordered_map<std::string, std::string> by_worker_;  // worker ID -> actor ID
  std::unordered_map<std::string, uint64_t> attempts_;      // actor ID -> current scheduling attempt
  std::deque<std::string> dead_;                            // dead actors' IDs, oldest first
  LongPoll<rpc::ActorInfo, rpc::GetActorInfoReply> waiters_;
};

}  // namespace orb::gcs

// The core worker: the library inside every driver and worker (object reads and
// reconstruction in core_worker_objects.cc, actors and placement groups in their own
// files). A thin facade over
//   - ObjectTable      (the objects this process owns and their references),
//   - StoreClient      (the node's shared-memory object store),
//   - TaskSubmitter    (leases and pushes the tasks this process owns),
//   - TaskReceiver     (runs tasks pushed to this process, in worker mode),
// plus the CoreWorkerService it serves (PushTasks, GetObjectStatus).
//
// Thread-safe: the C++ API calls it from any user thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/event_loop.h"
#include "common/call_stream_server.h"
#include "common/id.h"
#include "common/rpc.h"
#include "common/rpc_server.h"
#include "core/actor_submitter.h"
#include "core/generator_streams.h"
#include "core/object_table.h"
#include "core/runtime.h"
#include "core/store_client.h"
#include "core/log_subscriber.h"
#include "core/task_event_buffer.h"
#include "core/task_canceller.h"
#include "core/task_receiver.h"
#include "core/task_submitter.h"
#include "core/worker_client_pool.h"
#include "gcs_service.grpc.pb.h"
#include "orb/api.h"
#include "raylet_service.grpc.pb.h"

namespace orb {

struct CoreWorkerOptions {
  bool is_driver = true;
  std::string gcs_address;
  std::string raylet_address;  // empty (driver): the earliest alive raylet on this host
  std::string token;
  std::string node_ip = "127.0.0.1";
  // Driver only: how raylets start this job's workers.
  std::string worker_executable;
  std::vector<std::string> code_search_path;
  std::string python_executable;  // empty: the raylet's
  std::vector<std::string> python_path;
  std::string ray_namespace;
  // Driver only: the lifetime of actors that do not choose one.
  bool detached_actors_by_default = false;
  int prestart_workers = 0;  // Config::prestart_workers
  // The runtime environment tasks and actors submitted here start from (canonical JSON;
  // see common/runtime_env_spec.h): the job's in a driver, its own in a worker.
  std::string runtime_env;
  // Worker only: identity given by the raylet.
  JobID job_id;
  WorkerID worker_id;
  // Values up to this size travel inline; larger ones go through the object store.
  size_t max_inline_bytes = 100 * 1024;
};

class CoreWorker : public Runtime {
 public:
  static absl::StatusOr<std::unique_ptr<CoreWorker>> Connect(CoreWorkerOptions options);
  ~CoreWorker() override;

  std::vector<internal::RefData> SubmitTask(const std::string& function_name, std::vector<internal::ArgData> args,
                                            const internal::TaskOptionsData& options) override;
  internal::RefData PutWith(size_t size, const std::function<void(char*)>& write) override;
  std::vector<std::shared_ptr<internal::ValueBuffer>> Get(const std::vector<internal::RefData>& refs,
                                                          int64_t timeout_ms) override;
  std::vector<bool> Wait(const std::vector<internal::RefData>& refs, int num_objects, int64_t timeout_ms) override;
  void AddLocalReference(const std::string& id) override;
  void RemoveLocalReference(const std::string& id) override;
  std::vector<NodeInfo> Nodes() override;
  void RequestResources(const std::vector<std::map<std::string, double>>& bundles) override;

  // The borrower protocol (object_table.h). A ref read out of a value: one more hold,
  // a borrow when another process owns it.
  void Borrow(const internal::RefData& ref) override;
  // Registers the queued borrows with their owners, one call per owner, and waits.
  void RegisterBorrows() override;

  // Actors (core_worker_actors.cc). IDs are binary.
  std::string CreateActor(const std::string& factory_name, std::vector<internal::ArgData> args,
                          const internal::ActorOptionsData& options) override;
  std::vector<internal::RefData> SubmitActorTask(const std::string& actor_id, const std::string& method_name,
                                                 std::vector<internal::ArgData> args,
                                                 const internal::TaskOptionsData& options) override;
  void KillActor(const std::string& actor_id, bool no_restart, const std::string& reason) override;
  internal::RefData TrackActorHandles(const std::string& actor_id) override;

  // Streaming generators (generator_streams.h; core_worker_objects.cc).
  internal::GeneratorNext NextGeneratorItem(const internal::RefData& task_ref, int64_t timeout_ms,
                                            internal::RefData* item) override;
  void DropGenerator(const internal::RefData& task_ref) override;
  std::vector<internal::RefData> PeekGeneratorItems(const internal::RefData& task_ref, int64_t n) override;
  // Calls `callback` once the object is ready (or known lost): owned ones when they
  // complete, borrowed ones through long polls to their owner.
  void WhenReady(const internal::RefData& ref, std::function<void()> callback) override;
  bool ReportGeneratorItem(internal::ReturnData item) override;
  // orb::Cancel (task_canceller.h); `object_id` is binary.
  void CancelTask(const internal::RefData& ref, bool force, bool recursive) override;
  // Empty when no live actor has that name.
  std::string GetNamedActor(const std::string& name, const std::string& ray_namespace) override;
  std::string CurrentActorId() const override;  // hex; empty outside an actor

  // The GCS key-value store, in this job's namespace unless `ns` is given.
  void KvPut(const std::string& ns, const std::string& key, const std::string& value);
  std::optional<std::string> KvGet(const std::string& ns, const std::string& key);
  void KvDeletePrefix(const std::string& ns, const std::string& prefix);

  // Placement groups (core_worker_placement_groups.cc). IDs are hex.
  std::string CreatePlacementGroup(const PlacementGroupCreationOptions& options) override;
  bool LookUpPlacementGroup(const std::string& id_hex, const std::string& name, internal::PlacementGroupData* out) override;
  std::vector<internal::PlacementGroupData> ListPlacementGroups() override;
  bool WaitPlacementGroupReady(const std::string& id_hex, int64_t timeout_ms) override;
  void RemovePlacementGroup(const std::string& id_hex) override;
  bool WasCurrentActorRestarted() const override;

  // Worker mode: runs pushed tasks on this thread until the worker is told to exit.
  void RunTaskLoop();
  // Leaves the cluster: returns leases, marks the job finished (driver), stops serving.
  void Disconnect() override;

  const NodeID& node_id() const { return node_id_; }
  const std::string& node_ip() const { return options_.node_ip; }
  const JobID& job_id() const { return options_.job_id; }
  const std::string& ray_namespace() const { return options_.ray_namespace; }
  std::string CurrentTaskId() const;  // binary
  std::string NamespaceName() const override { return options_.ray_namespace; }
  std::string NodeIdHex() const override { return node_id_.Hex(); }
  std::string JobIdHex() const override { return options_.job_id.Hex(); }
  std::string WorkerIdHex() const override { return options_.worker_id.Hex(); }
  std::string TaskIdHex() const override;
  std::string CurrentPlacementGroupId() const override;
  void LendCpu(bool lend) override { SetBlocked(lend); }
  std::map<std::string, double> CurrentTaskResources() const override;
  ClusterEndpoints GetClusterEndpoints() override;
  std::string GcsAddress() const override { return options_.gcs_address; }
  const std::string& token() const { return options_.token; }

  void HandlePushTasks(const rpc::PushTasksRequest& req, rpc::PushTasksReply* reply, SendReply send);
  // The same, arrived on the call stream (on the thread that runs tasks).
  void HandleCallStream(uint8_t method, std::string_view payload, CallStreamServer::Responder responder);
  void HandleGetObjectStatus(const rpc::GetObjectStatusRequest& req, rpc::GetObjectStatusReply* reply,
                             SendReply send);
  void HandleExit(const rpc::ExitRequest& req, rpc::ExitReply* reply, SendReply send);
  void HandleCancelTask(const rpc::CancelTaskRequest& req, rpc::CancelTaskReply* reply, SendReply send);
  void HandleRemoteCancelTask(const rpc::RemoteCancelTaskRequest& req, rpc::RemoteCancelTaskReply* reply, SendReply send);
  // A worker's results that came before the rest of their batch (TaskReceiver).
  void HandleReportGeneratorItem(const rpc::ReportGeneratorItemRequest& req, rpc::ReportGeneratorItemReply* reply,
                                 SendReply send);
  void HandleReportTaskResults(const rpc::ReportTaskResultsRequest& req, rpc::ReportTaskResultsReply* reply,
                               SendReply send);
  void HandleUpdateBorrowers(const rpc::UpdateBorrowersRequest& req, rpc::UpdateBorrowersReply* reply, SendReply send);
  // What this process owns and borrows, for `orb list objects`.
  // A drained node handed the primary of an object this process owns to another node.
  void HandleObjectMoved(const rpc::ObjectMovedRequest& req, rpc::ObjectMovedReply* reply, SendReply send);
  void HandleListOwnedObjects(const rpc::ListOwnedObjectsRequest& req, rpc::ListOwnedObjectsReply* reply,
                              SendReply send);
  // This process's user metrics and the runtime's own, for its raylet's /metrics.
  void HandleGetWorkerMetrics(const rpc::GetWorkerMetricsRequest& req, rpc::GetWorkerMetricsReply* reply,
                              SendReply send);

 private:
  explicit CoreWorker(CoreWorkerOptions options);
  absl::Status Start();
  absl::Status FindLocalRaylet();
  // A worker's call stream (call_stream_); a driver serves none.
  absl::Status StartCallStream();
  // The canonical environment of a task that asks for `requested` (RuntimeEnv JSON) on
  // top of this process's. RuntimeEnvError when it is malformed.
  std::string EffectiveRuntimeEnv(const std::string& requested) const;
  // `options`, or — when they name no placement and the current task captures its
  // children (placement_group_capture_child_tasks) — placed in the current task's group.
  static internal::TaskOptionsData CapturedPlacement(const internal::TaskOptionsData& options);
  rpc::TaskSpec BuildSpec(const std::string& function_name, std::vector<internal::ArgData> args,
                          const internal::TaskOptionsData& options, bool default_cpu);
  // How long API calls wait for a GCS that is unreachable (restarting), as Ray's
  // gcs_rpc_server_reconnect_timeout_s.
  static constexpr std::chrono::seconds kGcsReconnectWindow{60};
  // Routes the API's placement group, actor and KV calls to the GCS over its call
  // stream, looking its port up on the first such call and again (at most every few
  // seconds) after the stream broke; never again when the stream failed before it
  // ever answered (the port is not reachable from here: the calls stay on gRPC).
  // ORB_CONTROL_CALL_STREAM=0: never.
  void RouteGcsCalls();
  // A GCS call for the API, retried while the GCS is unreachable; failure throws
  // orb::Error("<what>: <cause>"). `timeout` 0: the default deadline.
  template <class Reply, class Req, class Bound>
  Reply CallGcs(Bound bound, const Req& request, const std::string& what,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
    RouteGcsCalls();
    CallOptions call = CallOptions::RetriedFor(kGcsReconnectWindow);
    if (timeout.count() > 0) call.timeout = timeout;
    auto reply = gcs_->CallSync<Reply>(bound, request, call);
    if (reply.ok()) return std::move(*reply);
    std::string message = what + ": " + std::string(reply.status().message());
    if (reply.status().code() == absl::StatusCode::kAlreadyExists) throw NameTakenError(message);
    throw Error(message);
  }
  ObjectID NextPutId();
  // The value of one object, waiting until `deadline`; throws orb::Error subclasses.
  std::shared_ptr<internal::ValueBuffer> GetOne(const internal::RefData& ref,
                                                std::chrono::steady_clock::time_point deadline);
  // A borrowed object's value, from its owner; reports copies that cannot be read.
  std::shared_ptr<internal::ValueBuffer> GetBorrowed(const ObjectID& id, const std::string& owner,
                                                     std::chrono::steady_clock::time_point deadline);
  // A readable view of `value`. When its store copy cannot be read: with `lost`, says
  // why there and returns null; without, throws ObjectLostError.
  std::shared_ptr<internal::ValueBuffer> Materialize(const ObjectID& id, ObjectValuePtr value,
                                                     std::chrono::steady_clock::time_point deadline,
                                                     std::string* lost = nullptr);
  // The owner's answer within `deadline` (null: still pending). `lost_node`: tell the
  // owner its copy there could not be read. OwnerDiedError when the owner is gone.
  ObjectValuePtr AskOwner(const ObjectID& id, const std::string& owner,
                          std::chrono::steady_clock::time_point deadline, const std::string& lost_node = "");
  // Owned object `id`'s copy at node `lost_node` (binary) is gone: re-runs the tasks
  // that make it (and its lost arguments), or makes its value the error saying why not;
  // then `done` (on a gRPC thread). The second form waits.
  void RebuildLost(const ObjectID& id, const std::string& lost_node, const std::string& reason,
                   std::function<void()> done);
  void RebuildLost(const ObjectID& id, const std::string& lost_node, const std::string& reason);
  rpc::ObjectValue StoreValue(const ObjectID& id, std::string bytes, const rpc::Address& owner);
  // A task's result holds `refs` (each held once here): registers `caller` as their
  // borrower with each owner, lists them in `value`, then drops this process's holds.
  void HandOverRefs(const std::vector<internal::RefData>& refs, const rpc::Address& caller, rpc::ObjectValue* value);
  // Tells `owner` that `borrower` holds `delta` more references to each of `ids`;
  // waits when `wait`. The IDs the owner does not have.
  std::vector<ObjectID> UpdateBorrowersAt(const std::string& owner, const std::string& borrower,
                                          const std::vector<ObjectID>& ids, int delta, bool wait);
  // UpdateBorrowersAt for objects this process owns.
  std::vector<ObjectID> UpdateOwnBorrowers(const std::string& borrower, const std::vector<ObjectID>& ids, int delta);
  // A Wait over borrowed refs: which are ready, as their owners answer.
  struct WaitState {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<bool> ready;  // guarded by mu
    size_t num_ready = 0;     // guarded by mu
    bool done = false;        // guarded by mu: the Wait returned; stop asking
    std::function<void()> on_ready;  // WhenReady's: run once, at the first ready
    void Mark(size_t i) {
      std::function<void()> callback;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (ready[i]) return;
        ready[i] = true;
        ++num_ready;
        cv.notify_all();
        callback.swap(on_ready);
      }
      if (callback) callback();
    }
  };
  // Long-polls `owner` for borrowed object `id` until it is ready or `deadline`.
  void PollOwner(std::shared_ptr<WaitState> state, size_t index, const ObjectID& id, const std::string& owner,
                 std::chrono::steady_clock::time_point deadline);
  // Asks the owners of refs[i] (i in `borrowed`) once, answered at once, which are ready
  // (or lost: Get says so); `ready` with those marked. A wait with no time to wait.
  std::vector<bool> PollOwnersOnce(const std::vector<internal::RefData>& refs, const std::vector<size_t>& borrowed,
                                   std::vector<bool> ready);
  void SetBlocked(bool blocked);
  std::string OwnerString() const;
  // Stores return `id` of the task `spec` runs here for its caller (inline or in the
  // store), handing the refs inside it over to the caller.
  rpc::ObjectValue StoreReturn(const rpc::TaskSpec& spec, const ObjectID& id, std::string bytes,
                               const std::vector<internal::RefData>& refs);
  // Refs to objects this process owns (a task's returns), each holding its first reference.
  std::vector<internal::RefData> RefsTo(const std::vector<ObjectID>& ids) const;

  CoreWorkerOptions options_;
  NodeID node_id_;
  rpc::Address self_address_;
  EventLoop loop_;
  // Before gcs_: its calls' callbacks touch it, and gcs_ drains them as it goes.
  std::unique_ptr<TaskEventBuffer> task_events_;
  std::unique_ptr<LogSubscriber> log_subscriber_;  // drivers: their workers' output
  std::unique_ptr<RpcClient<rpc::GcsService>> gcs_;
  std::unique_ptr<RpcClient<rpc::RayletService>> raylet_;
  std::unique_ptr<WorkerClientPool> worker_clients_;
  std::unique_ptr<CallStreamClientPool> call_stream_clients_;
  std::unique_ptr<TaskPusher> pusher_;
  std::unique_ptr<RayletClientPool> raylet_clients_;
  std::unique_ptr<ObjectTable> objects_;
  std::unique_ptr<GeneratorStreams> streams_;  // streaming tasks this process submitted
  std::unique_ptr<StoreClient> store_;
  std::unique_ptr<TaskSubmitter> submitter_;
  std::unique_ptr<ActorSubmitter> actor_submitter_;
  std::unique_ptr<TaskReceiver> receiver_;
  std::unique_ptr<TaskCanceller> canceller_;  // after what it cancels through
  std::unique_ptr<RpcService> service_;
  StartedServer server_;
  std::string unix_socket_;  // where this process also serves, for callers on its node
  // Where a worker takes task pushes and actor calls (polled by receiver_'s Run); drivers
  // serve none. Destroyed before receiver_, which no longer polls it by then.
  std::unique_ptr<CallStreamServer> call_stream_;
  std::atomic<uint32_t> put_index_{0};
  TaskID driver_task_id_;  // the pseudo-task that a driver's Puts and submissions belong to
  std::atomic<bool> disconnected_{false};
  mutable std::mutex actor_mu_;
  std::string hosted_actor_id_;  // binary; the actor this worker hosts
  bool hosted_actor_restarted_ = false;
  // Actors this worker created that die with it (not detached) and that no count of
  // handles ends (C++'s; Python's are tracked, TrackActorHandles): while it has any, it
  // does not exit for idling. Empty in a driver. Guarded by actor_mu_.
  std::set<std::string> untracked_owned_actors_;
  std::mutex gcs_route_mu_;
  std::chrono::steady_clock::time_point next_gcs_route_lookup_;  // guarded by gcs_route_mu_
  std::mutex placement_groups_mu_;
  // Groups this process created that were placed before Create returned (a Wait on
  // them needs no round trip); guarded by placement_groups_mu_.
  std::set<std::string> placement_groups_created_;
};

}  // namespace orb

// Sends actor method calls from this process (a driver or worker) to the actors'
// workers, in order, and records their results in the ObjectTable.
//
// Per actor it keeps the last state the GCS reported (long-polling GetActorInfo for
// the next version while calls are outstanding), the calls not sent yet, and the
// batches in flight. For an ordered actor (max_concurrency 1) one batch is in flight at
// a time, so calls run in submission order; calls made meanwhile go out together in the
// next batch. A concurrent actor (max_concurrency n) has up to n batches in flight.
// Each concurrency group of the actor has as many batches in flight as it runs calls at
// once, a batch holding calls of one group; calls keep their order within a group.
//
// A batch whose push fails (the actor's process died): its calls with retries left
// (the actor's max_task_retries) are queued again in front, in order, and sent once the
// GCS reports the actor alive again (restarted); the others fail with ActorDiedError,
// after a short wait for the GCS's word on why the actor died (Ray's death info), so
// that the error says (killed, exited on purpose, its node died...).
// A call alone in its batch was the one running and is charged a retry; calls of a
// larger batch are not (which one ran is not known) but go again one per batch, so a
// call that kills the actor uses up only its own retries. Results a worker reports
// before its batch's reply complete their calls at once (CompleteEarly).
// When the GCS reports the actor dead, every call waiting fails with its death reason
// (a TaskError when its constructor threw).
//
// A call whose arguments include objects this process owns that are not ready yet is
// sent once they are (Ray's dependency resolution): it never occupies the actor while
// they are made, so calls of other callers run meanwhile. In an ordered group it holds
// the calls behind it (their order is kept); in a concurrent one they pass it. A return
// of an earlier call to the same actor is not waited for: the worker takes it there.
//
// Submit() is thread-safe; replies arrive on transport threads. State is guarded by mu_.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <functional>
#include <vector>

#include "common/id.h"
#include "common/rpc.h"
#include "core/object_table.h"
#include "core/task_returns.h"
#include "common/task_pusher.h"
#include "gcs_service.grpc.pb.h"

namespace orb {

class TaskEventBuffer;

class ActorSubmitter {
 public:
  // `events`: records each call's steps (null: none). `post` runs a closure soon on
  // another thread, with no lock held (an argument became ready).
  using Post = std::function<void(std::function<void()>)>;
  ActorSubmitter(ObjectTable* objects, RpcClient<rpc::GcsService>* gcs, TaskPusher* pusher, Post post,
                 TaskEventBuffer* events = nullptr);

  // Takes one call (spec.actor_id set). Its return object must already be pending.
  void Submit(rpc::TaskSpec spec);
  // Stops sending; calls not sent yet stay pending.
  void Shutdown();
  // This process just killed the actor (`reason`: why, for its calls' errors): later
  // calls fail at once (no_restart), or wait for the GCS to report it again (a restart),
  // instead of reaching the dying process.
  void OnKilled(const std::string& actor_id, bool no_restart, const std::string& reason);
  // orb::Cancel of a call: one not sent yet fails as TASK_CANCELLED and is never sent;
  // one sent is on the actor's worker, which must be told (it skips the call if it has
  // not started it).
  CancelOutcome Cancel(const std::string& task_id);
  // Whether the call `task_id` is one of this submitter's, not finished.
  bool Owns(const std::string& task_id);
  // A result reported before its batch's reply: completes the call if it is one of
  // this submitter's in flight; false otherwise.
  bool CompleteEarly(rpc::TaskResult result);

 private:
  struct Call {
    rpc::TaskSpec spec;
    int retries_left = 0;  // -1: without limit
    bool suspect = false;  // was in a batch whose process died, not charged: sent alone
    bool done = false;     // completed by an early report
    int unresolved = 0;    // arguments owned here that are not ready yet
  };
  struct ActorState {
    rpc::ActorInfo info;
    bool known = false;      // info came from the GCS
    bool reachable = false;  // ALIVE and no push to it has failed since that report
    bool watching = false;
    bool exiting = false;    // a call's result said it exited (ExitActor): the GCS hears at once
    std::deque<Call> waiting;
    std::map<uint64_t, std::vector<Call>> in_flight;  // batch number -> calls
    uint64_t next_batch = 0;
    // Calls lost in flight with no retry left, failed once the GCS says why (or soon).
    std::vector<Call> lost;
    std::string lost_why;
  };

  void Pump(const std::string& actor_id, ActorState& actor);
  // An argument of the waiting call `task_id` is ready.
  void OnArgReady(const std::string& actor_id, const std::string& task_id);
  void SendBatch(const std::string& actor_id, ActorState& actor, std::vector<Call> calls);
  void OnBatchDone(const std::string& actor_id, uint64_t batch, const absl::Status& status, rpc::PushTasksReply reply);
  void OnBatchDoneLocked(const std::string& actor_id, uint64_t batch, const absl::Status& status,
                         rpc::PushTasksReply reply);
  void Watch(const std::string& actor_id, ActorState& actor);
  void OnActorInfo(const std::string& actor_id, const absl::Status& status, rpc::GetActorInfoReply reply);
  void OnActorInfoLocked(const std::string& actor_id, const absl::Status& status, rpc::GetActorInfoReply reply);
  void FailCall(const Call& call, rpc::ErrorType type, const std::string& message);
  // Fails the actor's lost calls with what is known now of its death.
  void FailLost(ActorState& actor);
  // `more`: the values of returns 2..num_returns.
  void Complete(const rpc::TaskSpec& spec, rpc::ObjectValue value, MoreReturnValues more = {});
  static std::string Describe(const rpc::ActorInfo& info);
  // Issues the RPCs decided under mu_. REQUIRES: mu_ not held (a callback that runs at
  // once would take it again).
  void Flush();

  ObjectTable* objects_;
  RpcClient<rpc::GcsService>* gcs_;
  TaskPusher* pusher_;
  Post post_;
  TaskEventBuffer* events_;
  std::mutex mu_;
  std::unordered_map<std::string, ActorState> actors_;  // guarded by mu_
  // Calls of batches in flight by task ID: (actor ID, batch number). Guarded by mu_.
  std::unordered_map<std::string, std::pair<std::string, uint64_t>> in_flight_calls_;
  bool stopped_ = false;                                 // guarded by mu_
  std::vector<std::function<void()>> outbox_;            // RPCs to issue, guarded by mu_
};

}  // namespace orb

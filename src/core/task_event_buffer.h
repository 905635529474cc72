// The task events this process records, for the state API and the timeline: as an
// owner, a task submitted (PENDING_NODE_ASSIGNMENT), pushed to a worker
// (SUBMITTED_TO_WORKER) and finished or failed with its error; as an executor, the run
// (RUNNING, with its worker and when it ended). Sent to the GCS in
// batches: an owner's `flush_interval` after the first event of a batch, an executor's
// kExecutorFlushDelay after a run (soon: a worker is killed when its job ends, maybe
// right after its last task), and everything when the process disconnects.
// Bounded: past
// `max_buffered` events new ones are dropped and counted, and a batch the GCS did not
// take is counted the same way (the GCS reports the total). Thread-safe.
//
// ORB_TASK_EVENTS=0 turns recording off; ORB_TASK_EVENTS_FLUSH_MS sets the interval.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "common/event_loop.h"
#include "common/rpc.h"
#include "gcs_service.grpc.pb.h"

namespace orb {

class TaskEventBuffer {
 public:
  struct Options {
    bool enabled = true;
    std::chrono::milliseconds flush_interval{200};
    size_t max_buffered = 100000;
  };
  static Options OptionsFromEnv();

  // Calls the GCS through `gcs`; flushes are timed on `loop`.
  TaskEventBuffer(RpcClient<rpc::GcsService>* gcs, EventLoop* loop, Options options);

  // An event of `spec`'s current attempt, stamped now.
  void RecordSpec(const rpc::TaskSpec& spec, rpc::TaskState state, const rpc::ErrorInfo* error = nullptr);
  // The executor's record of one run: RUNNING from `start_ns` to `end_ns` on this
  // worker; for an actor's constructor (whose owner, the GCS, records nothing) also
  // FINISHED or (with `error`) FAILED. The owner reports other tasks' outcomes.
  void RecordRun(const rpc::TaskSpec& spec, int64_t start_ns, int64_t end_ns, const rpc::ErrorInfo* error);
  // Where this process runs, for its executor events.
  void SetExecutor(const std::string& node_id, const std::string& worker_id, int32_t pid);
  // Sends what is buffered; with `wait`, waits up to `timeout` for the GCS to take it.
  void Flush(bool wait = false, std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));
  bool enabled() const { return options_.enabled; }

  static constexpr std::chrono::milliseconds kExecutorFlushDelay{50};

 private:
  rpc::TaskEvent EventOf(const rpc::TaskSpec& spec, rpc::TaskState state, int64_t time_ns) const;
  // `soon`: flush kExecutorFlushDelay from now, else `flush_interval` from now (unless
  // a flush is due already).
  void Add(rpc::TaskEvent event, bool soon = false);

  RpcClient<rpc::GcsService>* gcs_;
  EventLoop* loop_;
  const Options options_;
  std::string node_id_, worker_id_;
  int32_t pid_ = 0;
  std::mutex mu_;
  std::vector<rpc::TaskEvent> events_;  // guarded by mu_
  bool flush_due_ = false;              // guarded by mu_: a flush is timed
  bool flush_posted_ = false;           // guarded by mu_: a flush is posted
  int64_t dropped_ = 0;                 // guarded by mu_; not yet reported
};

}  // namespace orb

// Tells the raylet when jobs end and when workers die on other nodes, from the GCS's job
// and worker channels (a long poll), so that what they left on this node is reclaimed:
// - a finished job's leases (granted through spillback even when its driver ran
//   elsewhere) and its workers: a driver that exits without returning its leases (its
//   ReturnWorker lost, or the driver killed) would otherwise hold them here forever;
// - a dead worker's leases and queued lease requests: a task that submits tasks owns
//   their leases, wherever they were granted, and when its process dies (killed, out of
//   memory, an actor killed after it ran such a task) nobody would return them.
// It also says when a job starts (or, at start and after a GCS restart, which jobs are
// running), so that the node can prestart the job's workers.
// After a GCS restart (its sequence numbers start over) it lists every job once to catch up.
//
// Callbacks run on the raylet's event loop. Start/Stop on any thread.
#pragma once

#include <atomic>
#include <functional>

#include "common/event_loop.h"
#include "common/id.h"
#include "common/rpc.h"
#include "gcs_service.grpc.pb.h"

namespace orb {

class DeathWatcher {
 public:
  using OnJobFinished = std::function<void(const rpc::JobInfo&)>;
  using OnWorkerDied = std::function<void(const rpc::ReportWorkerFailureRequest&)>;
  using OnJobRunning = std::function<void(const rpc::JobInfo&)>;  // may be called again for one job
  DeathWatcher(RpcClient<rpc::GcsService>* gcs, EventLoop* loop, OnJobFinished on_job_finished,
               OnWorkerDied on_worker_died, OnJobRunning on_job_running = nullptr);
  void Start();
  void Stop() { stopped_ = true; }

 private:
  void Poll();
  void OnPoll(const absl::Status& status, const rpc::PollReply& reply);
  // Every job the GCS knows: the dead ones are reported (again; the callback is idempotent).
  void CatchUp();

  RpcClient<rpc::GcsService>* gcs_;
  EventLoop* loop_;
  OnJobFinished on_job_finished_;
  OnWorkerDied on_worker_died_;
  OnJobRunning on_job_running_;
  int64_t after_sequence_ = 0;  // loop thread only
  std::atomic<bool> stopped_{false};
};

}  // namespace orb

// Tells the raylet when jobs end, from the GCS's job channel (a long poll), so that what
// a finished job left on this node is reclaimed even when its driver ran on another
// node: leases granted to it (through spillback), and its workers. A driver that exits
// without returning its leases (its ReturnWorker lost, or the driver killed) would
// otherwise hold them here forever. After a GCS restart (its sequence numbers start
// over) it lists every job once to catch up.
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

class JobWatcher {
 public:
  JobWatcher(RpcClient<rpc::GcsService>* gcs, EventLoop* loop, std::function<void(const rpc::JobInfo&)> on_job_finished);
  void Start();
  void Stop() { stopped_ = true; }

 private:
  void Poll();
  void OnPoll(const absl::Status& status, const rpc::PollReply& reply);
  // Every job the GCS knows: the dead ones are reported (again; the callback is idempotent).
  void CatchUp();

  RpcClient<rpc::GcsService>* gcs_;
  EventLoop* loop_;
  std::function<void(const rpc::JobInfo&)> on_job_finished_;
  int64_t after_sequence_ = 0;  // loop thread only
  std::atomic<bool> stopped_{false};
};

}  // namespace orb

// A driver's view of its workers' output, as Ray's log_to_driver: the lines its job's
// workers write to stdout and stderr (tailed by their raylets, published by the GCS on
// LOG_CHANNEL) printed on the driver's stderr with where they came from:
//   (Keeper pid=4242, node=9e0b76a9) keeper served 5
// ORB_LOG_TO_DRIVER=0 turns it off. Lines may lag by about half a second; those a worker
// writes just before its driver exits may not be printed.
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>

#include "common/event_loop.h"
#include "common/id.h"
#include "common/rpc.h"
#include "gcs_service.grpc.pb.h"

namespace orb {

class LogSubscriber {
 public:
  LogSubscriber(RpcClient<rpc::GcsService>* gcs, EventLoop* loop, JobID job, std::ostream* out);
  static bool EnabledByEnv();

  void Start();
  // No poll after this; one in flight is cancelled with the GCS client.
  void Stop() { stopped_ = true; }

 private:
  void Poll();
  void Print(const rpc::LogBatch& batch);

  RpcClient<rpc::GcsService>* gcs_;
  EventLoop* loop_;
  const JobID job_;
  std::ostream* out_;
  std::atomic<bool> stopped_{false};
  int64_t after_ = 0;  // the last sequence seen; one poll at a time
};

}  // namespace orb

// Sends batches of tasks (PushTasks) to the workers that run them: over the worker's
// call stream when it serves one (common/call_stream_client.h; its Unix socket on the
// same node, TCP otherwise), else over gRPC (its Unix socket on the same node). Both
// answer the same way: a reply, or a status that says the worker is gone or refused.
// Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "common/call_stream_client.h"
#include "common/client_pool.h"
#include "core_worker_service.grpc.pb.h"

namespace orb {

class TaskPusher {
 public:
  // `done` runs once, on a transport thread, or on the calling thread when the push
  // fails at once.
  using Done = std::function<void(const absl::Status& status, rpc::PushTasksReply&& reply)>;

  // `local_node_id`: this process's node (binary), to pick Unix sockets for its workers;
  // empty in a process of no node (the GCS).
  TaskPusher(ClientPool<rpc::CoreWorkerService>* grpc, ClientPoolOf<CallStreamClient>* streams,
             std::string local_node_id)
      : grpc_(grpc), streams_(streams), local_node_id_(std::move(local_node_id)) {}

  void Push(const rpc::Address& worker, const rpc::PushTasksRequest& request, Done done);

  // Reads, on this thread, the replies to this thread's last push over a call stream
  // until `done()` or `until` (CallStreamClient::Assist); false when there is none to read.
  bool AssistLastPush(const std::function<bool()>& done, std::chrono::steady_clock::time_point until);

  // Where `worker` takes gRPC calls from this node.
  std::string GrpcEndpoint(const rpc::Address& worker) const;
  // Where it takes call-stream calls from this node; empty when it serves none.
  std::string StreamEndpoint(const rpc::Address& worker) const;

 private:
  ClientPool<rpc::CoreWorkerService>* grpc_;
  ClientPoolOf<CallStreamClient>* streams_;  // null: gRPC only
  const std::string local_node_id_;
};

}  // namespace orb

#include "common/task_pusher.h"

#include "common/call_stream_protocol.h"

namespace orb {

namespace {
// The call stream this thread pushed to last: a Get that follows may read its reply.
thread_local std::weak_ptr<CallStreamClient> last_stream;
}  // namespace

bool TaskPusher::AssistLastPush(const std::function<bool()>& done, std::chrono::steady_clock::time_point until) {
  std::shared_ptr<CallStreamClient> client = last_stream.lock();
  return client && client->Assist(done, until);
}

std::string TaskPusher::GrpcEndpoint(const rpc::Address& worker) const {
  if (worker.node_id() == local_node_id_ && !worker.unix_socket().empty()) return "unix:" + worker.unix_socket();
  return worker.ip() + ":" + std::to_string(worker.port());
}

std::string TaskPusher::StreamEndpoint(const rpc::Address& worker) const {
  if (worker.node_id() == local_node_id_ && !worker.call_socket().empty()) return "unix:" + worker.call_socket();
  if (worker.call_port() > 0) return worker.ip() + ":" + std::to_string(worker.call_port());
  return "";
}

void TaskPusher::Push(const rpc::Address& worker, const rpc::PushTasksRequest& request, Done done) {
  std::string stream = streams_ ? StreamEndpoint(worker) : "";
  size_t bytes = stream.empty() ? 0 : request.ByteSizeLong();
  if (!stream.empty() && bytes <= call_stream::kMaxPayloadBytes) {
    std::string payload;
    request.SerializeToString(&payload);
    std::shared_ptr<CallStreamClient> client = streams_->Get(stream);
    last_stream = client;
    client->Call(call_stream::kPushTasks, payload,
                                [done = std::move(done)](const absl::Status& status, std::string_view bytes) {
                                  rpc::PushTasksReply reply;
                                  if (!status.ok()) return done(status, std::move(reply));
                                  if (!reply.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
                                    return done(absl::InternalError("the worker's reply is not a PushTasksReply"),
                                                std::move(reply));
                                  }
                                  done(status, std::move(reply));
                                });
    return;
  }
  CallOptions call = CallOptions::UntilDone();  // tasks and methods may run as long as they like
  grpc_->Get(GrpcEndpoint(worker))
      ->Call<rpc::PushTasksReply>(
          ORB_RPC(PushTasks), request,
          [done = std::move(done)](const absl::Status& status, rpc::PushTasksReply&& reply) {
            done(status, std::move(reply));
          },
          call);
}

}  // namespace orb

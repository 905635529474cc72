#include "common/rpc.h"

#include <grpcpp/generic/generic_stub.h>

#include <mutex>

namespace orb {

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

bool TokenMatches(std::string_view presented, const std::string& token) {
  if (token.empty()) return true;
  if (presented.size() != token.size()) return false;
  // Constant-time comparison: a wrong token takes as long whichever byte differs.
  unsigned char diff = 0;
  for (size_t i = 0; i < token.size(); ++i) diff |= static_cast<unsigned char>(presented[i] ^ token[i]);
  return diff == 0;
}

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

namespace {

// gRPC serves the callback API from a process-global completion queue that lives while
// some channel that used it lives; when the last such channel goes, gRPC shuts the
// queue down while its own polling threads may still be in it, and the process can
// abort ("ref_counted.h: prior > 0"). Processes here create and drop channels all the
// time (clients per peer, per test), so one channel that made a callback call is kept
// for the life of the process.
void PinCallbackQueue() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto* channel = new std::shared_ptr<grpc::Channel>(
        grpc::CreateChannel("unix:/nonexistent/orb-callback-queue-pin", grpc::InsecureChannelCredentials()));
    auto* stub = new grpc::GenericStub(*channel);
    auto* context = new grpc::ClientContext();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1));
    grpc::Slice empty("");
    auto* request = new grpc::ByteBuffer(&empty, 1);
    auto* response = new grpc::ByteBuffer();
    // The call fails at once; starting it is what takes the queue reference. All of it
    // is left allocated on purpose.
    stub->UnaryCall(context, "/orb.Pin/Pin", grpc::StubOptions(), request, response, [](grpc::Status) {});
  });
}

}  // namespace

EventLoop& RetryTimer() {
  // Never destroyed: retries may be due while the process exits.
  static EventLoop* timer = [] {
    auto* loop = new EventLoop();
    loop->Start();
    return loop;
  }();
  return *timer;
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address) {
  PinCallbackQueue();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // Separate channels per client object: a busy stream must not stall control calls.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // While calls are open, ping the peer every kKeepaliveMs: a peer that is partitioned
  // away or frozen (not one that crashed: its socket closes) fails the calls within
  // about twice that, instead of at their deadlines (which may be a day: leases and
  // tasks may wait or run that long).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Object chunks are megabytes: a large HTTP/2 window lets them stream without
  // waiting for flow-control updates every 64 KiB.
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

}  // namespace orb

#include "common/rpc_server.h"

#include <grpcpp/generic/async_generic_service.h>

#include <mutex>

#include "common/metrics.h"

namespace orb {

void CountUnauthenticated() { IncrementCounter("rpc_rejected_unauthenticated"); }

RpcService::RpcService(std::string full_name, ServiceContext context)
    : full_name_(std::move(full_name)), context_(std::move(context)) {}

HistogramSeries* RpcServerLatency(const std::string& service, const std::string& method) {
  return GetHistogram("rpc_server_latency_seconds", {{"service", service}, {"method", method}},
                      "time from a request's arrival to its reply, by RPC method (seconds)");
}

HistogramSeries* RpcService::LatencyOf(const std::string& method) const {
  return RpcServerLatency(full_name_.substr(full_name_.rfind('.') + 1), method);  // "orb.rpc.GcsService" -> "GcsService"
}

const RpcService::Route* RpcService::Find(const std::string& path) const {
  auto it = routes_.find(path);
  return it == routes_.end() ? nullptr : &it->second;
}

std::vector<std::string> RpcService::paths() const {
  std::vector<std::string> out;
  for (const auto& [path, route] : routes_) out.push_back(path);
  return out;
}

namespace {

// A call answered from its metadata alone: its body is never read.
class RefusedCall : public grpc::ServerGenericBidiReactor {
 public:
  explicit RefusedCall(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

// One unary call: reads the request, runs the route, writes the reply. A call that is
// cancelled first (its deadline passed, its client went away, or the server is shutting
// down) is finished at once, and the handler's later reply is dropped: a handler that
// parks a call (a lease waiting for resources) must not hold up Server::Shutdown, which
// waits for every call to finish.
class RoutedCall : public grpc::ServerGenericBidiReactor {
 public:
  explicit RoutedCall(const RpcService::Route* route) : route_(route), state_(std::make_shared<State>()) {
    state_->call = this;
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return FinishOnce(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the call ended without a request"));
    (*route_)(&request_, [state = state_](grpc::Status status, grpc::ByteBuffer reply) {
      std::lock_guard<std::recursive_mutex> lock(state->mu);
      if (state->call == nullptr || state->finished) return;  // cancelled and gone
      state->finished = true;
      if (!status.ok()) return state->call->Finish(std::move(status));
      state->call->reply_ = std::move(reply);
      state->call->StartWriteAndFinish(&state->call->reply_, grpc::WriteOptions(), grpc::Status::OK);
    });
  }
  void OnCancel() override { FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled")); }
  void OnDone() override {
    {
      std::lock_guard<std::recursive_mutex> lock(state_->mu);
      state_->call = nullptr;
    }
    delete this;
  }

 private:
  // Shared with the handler's reply callback, which may run after the call is done.
  // Recursive: gRPC may run OnDone inline from Finish.
  struct State {
    std::recursive_mutex mu;
    RoutedCall* call = nullptr;  // null once done
    bool finished = false;       // Finish (or StartWriteAndFinish) was called
  };

  void FinishOnce(grpc::Status status) {
    std::shared_ptr<State> state = state_;  // `this` may be deleted inside Finish
    std::lock_guard<std::recursive_mutex> lock(state->mu);
    if (state->call == nullptr || state->finished) return;
    state->finished = true;
    state->call->Finish(std::move(status));
  }

  const RpcService::Route* route_;
  std::shared_ptr<State> state_;
  grpc::ByteBuffer request_, reply_;
};

class Router : public grpc::CallbackGenericService {
 public:
  explicit Router(std::vector<RpcService*> services) : services_(std::move(services)) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    for (RpcService* service : services_) {
      const RpcService::Route* route = service->Find(ctx->method());
      if (!route) continue;
      if (!Authorized(*ctx, service->context().token)) {
        CountUnauthenticated();
        return new RefusedCall(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                            "missing or wrong cluster token (orb-token metadata)"));
      }
      return new RoutedCall(route);
    }
    return new RefusedCall(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no such method: " + ctx->method()));
  }

 private:
  static bool Authorized(const grpc::GenericCallbackServerContext& ctx, const std::string& token) {
    if (token.empty()) return true;
    auto it = ctx.client_metadata().find(kTokenMetadataKey);
    if (it == ctx.client_metadata().end()) return false;
    return TokenMatches(std::string_view(it->second.data(), it->second.size()), token);
  }

  const std::vector<RpcService*> services_;
};

}  // namespace

absl::StatusOr<StartedServer> StartServer(const std::string& host, int port, const std::vector<RpcService*>& services,
                                          const std::string& unix_socket, ServerLimits limits) {
  StartedServer started;
  started.router = std::make_unique<Router>(services);
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(limits.max_message_bytes < 0 || limits.max_message_bytes > INT32_MAX
                                       ? -1
                                       : static_cast<int>(limits.max_message_bytes));
  builder.SetMaxSendMessageSize(-1);
  // Without this, a second server could bind the same port and steal half the calls.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20);
  // Clients ping every kKeepaliveMs while calls are open (a long task, a parked long
  // poll): accept that rather than answering it with GOAWAY (too_many_pings).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, kKeepaliveMs / 2);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddListeningPort(host + ":" + std::to_string(port), grpc::InsecureServerCredentials(), &started.port);
  if (!unix_socket.empty()) builder.AddListeningPort("unix:" + unix_socket, grpc::InsecureServerCredentials());
  builder.RegisterCallbackGenericService(started.router.get());
  started.server = builder.BuildAndStart();
  if (!started.server || started.port == 0) {
    return absl::UnavailableError("cannot listen on " + host + ":" + std::to_string(port) +
                                  " (address in use or not local?)");
  }
  return started;
}

}  // namespace orb

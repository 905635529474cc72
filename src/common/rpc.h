// RPC plumbing shared by every orb service and client, kept apart from component logic.
//
// Server side: each generated callback method calls Dispatch(), which checks the cluster
// token and then runs a handler `Handle(request, reply, send_reply)` on the daemon's
// event loop. Handlers never see gRPC server types beyond the reply they fill.
//
// Client side: RpcClient<Service> owns a channel and stub, attaches the token and a
// deadline to every call, and retries idempotent calls on UNAVAILABLE with backoff.
// Callbacks run on a gRPC thread; post into an EventLoop to touch loop-owned state.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/event_loop.h"

namespace orb {

inline constexpr char kTokenMetadataKey[] = "orb-token";

using SendReply = std::function<void(grpc::Status)>;

absl::Status FromGrpc(const grpc::Status& status);
grpc::Status ToGrpc(const absl::Status& status);

// Where a service's handlers run and which token its callers must present.
struct ServiceContext {
  EventLoop* loop = nullptr;  // null: run handlers on the gRPC thread
  std::string token;          // empty: no authentication
};

bool IsAuthorized(grpc::CallbackServerContext* ctx, const std::string& token);
// Whether `presented` is the cluster `token` (any value when the token is empty),
// compared in constant time.
bool TokenMatches(std::string_view presented, const std::string& token);
// Counts a call refused for a missing or wrong token (metric rpc_rejected_unauthenticated).
void CountUnauthenticated();

template <class Req, class Reply, class Handler>
grpc::ServerUnaryReactor* Dispatch(grpc::CallbackServerContext* ctx, const Req* req, Reply* reply,
                                   const ServiceContext& service, Handler handler) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  if (!IsAuthorized(ctx, service.token)) {
    CountUnauthenticated();
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                 "missing or wrong cluster token (orb-token metadata)"));
    return reactor;
  }
  auto run = [req, reply, reactor, handler = std::move(handler)]() mutable {
    handler(*req, reply, [reactor](grpc::Status status) { reactor->Finish(status); });
  };
  if (service.loop) {
    service.loop->Post(std::move(run));
  } else {
    run();
  }
  return reactor;
}

// Declares one callback method of a generated service that forwards to
// `handler_->Handle<Method>(request, reply, send_reply)`.
#define ORB_SERVICE_METHOD(Method)                                                          \
  grpc::ServerUnaryReactor* Method(grpc::CallbackServerContext* ctx,                        \
                                   const rpc::Method##Request* req,                          \
                                   rpc::Method##Reply* reply) override {                     \
    return ::orb::Dispatch(ctx, req, reply, service_context_,                                \
                           [h = handler_](const rpc::Method##Request& r,                     \
                                          rpc::Method##Reply* rep, ::orb::SendReply send) {  \
                             h->Handle##Method(r, rep, std::move(send));                     \
                           });                                                               \
  }

// As ORB_SERVICE_METHOD, forwarding to `target->Handle<Method>` instead of handler_.
#define ORB_SERVICE_METHOD_ON(Method, target)                                               \
  grpc::ServerUnaryReactor* Method(grpc::CallbackServerContext* ctx,                        \
                                   const rpc::Method##Request* req,                          \
                                   rpc::Method##Reply* reply) override {                     \
    return ::orb::Dispatch(ctx, req, reply, service_context_,                                \
                           [h = (target)](const rpc::Method##Request& r,                     \
                                          rpc::Method##Reply* rep, ::orb::SendReply send) {  \
                             h->Handle##Method(r, rep, std::move(send));                     \
                           });                                                               \
  }

// Binds a generated stub's async method, for RpcClient::Call.
#define ORB_RPC(Method)                                                 \
  [](auto* stub, auto* ctx, auto* req, auto* reply, auto callback) {    \
    stub->async()->Method(ctx, req, reply, std::move(callback));        \
  }

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address);

struct CallOptions {
  std::chrono::milliseconds timeout{10000};
  // Retries on UNAVAILABLE, for idempotent calls only.
  int max_attempts = 1;
  std::chrono::milliseconds initial_backoff{100};
};

template <class Service>
class RpcClient {
 public:
  using Stub = typename Service::Stub;

  RpcClient(const std::string& address, std::string token)
      : address_(address), token_(std::move(token)), stub_(Service::NewStub(MakeChannel(address))) {}
  // Cancels what is still in flight and waits for its callbacks, so that none runs on a
  // destroyed owner.
  ~RpcClient() { Drain(std::chrono::seconds(5)); }

  // Cancels every call in flight; their callbacks run soon with CANCELLED.
  void CancelAll() {
    std::lock_guard<std::mutex> lock(calls_mu_);
    for (grpc::ClientContext* context : in_flight_) context->TryCancel();
  }
  // Waits until no call is in flight; false on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(calls_mu_);
    return idle_cv_.wait_for(lock, timeout, [this] { return in_flight_.empty(); });
  }
  // Cancels what is in flight and waits for its callbacks to finish.
  bool Drain(std::chrono::milliseconds timeout) {
    CancelAll();
    return WaitIdle(timeout);
  }

  const std::string& address() const { return address_; }

  // Calls asynchronously; `done(status, reply)` runs on a gRPC thread.
  template <class Reply, class Req, class Bound>
  void Call(Bound bound, const Req& request, std::function<void(const absl::Status&, Reply&&)> done,
            CallOptions options = {}) {
    CallAttempt<Reply>(bound, std::make_shared<Req>(request), std::move(done), options, 1);
  }

  // Calls and waits. Must not be called on a thread that the reply needs (an EventLoop).
  template <class Reply, class Req, class Bound>
  absl::StatusOr<Reply> CallSync(Bound bound, const Req& request, CallOptions options = {}) {
    std::promise<absl::StatusOr<Reply>> promise;
    auto future = promise.get_future();
    Call<Reply>(
        bound, request,
        [&promise](const absl::Status& status, Reply&& reply) {
          if (status.ok()) {
            promise.set_value(std::move(reply));
          } else {
            promise.set_value(status);
          }
        },
        options);
    return future.get();
  }

 private:
  template <class Reply, class Req, class Bound>
  void CallAttempt(Bound bound, std::shared_ptr<Req> request,
                   std::function<void(const absl::Status&, Reply&&)> done, CallOptions options,
                   int attempt) {
    struct Call {
      grpc::ClientContext context;
      Reply reply;
    };
    auto call = std::make_shared<Call>();
    if (!token_.empty()) call->context.AddMetadata(kTokenMetadataKey, token_);
    call->context.set_deadline(std::chrono::system_clock::now() + options.timeout);
    {
      std::lock_guard<std::mutex> lock(calls_mu_);
      in_flight_.insert(&call->context);
    }
    bound(stub_.get(), &call->context, request.get(), &call->reply,
          [this, call, bound, request, done, options, attempt](grpc::Status status) {
            bool retry = status.error_code() == grpc::StatusCode::UNAVAILABLE && attempt < options.max_attempts;
            if (retry) {
              std::this_thread::sleep_for(options.initial_backoff * (1 << std::min(attempt - 1, 5)));
              CallAttempt<Reply>(bound, request, done, options, attempt + 1);
            } else {
              done(FromGrpc(status), std::move(call->reply));
            }
            std::lock_guard<std::mutex> lock(calls_mu_);
            in_flight_.erase(&call->context);
            if (in_flight_.empty()) idle_cv_.notify_all();
          });
  }

  std::string address_;
  std::string token_;
  std::unique_ptr<Stub> stub_;
  std::mutex calls_mu_;
  std::condition_variable idle_cv_;
  std::set<grpc::ClientContext*> in_flight_;  // guarded by calls_mu_
};

// Starts a gRPC server on `address` ("host:port"; port 0 picks a free one) with the given
// services. Returns the bound port, or an error naming the cause (e.g. port taken).
struct StartedServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};
// `unix_socket`, when not empty, is a path where the same services also listen.
absl::StatusOr<StartedServer> StartServer(const std::string& host, int port,
                                          const std::vector<grpc::Service*>& services,
                                          const std::string& unix_socket = "");

}  // namespace orb

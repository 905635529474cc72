// Client side of orb's RPCs (the server side is rpc_server.h), kept apart from
// component logic.
//
// RpcClient<Service> owns a channel and stub, attaches the token and a
// deadline to every call, and retries idempotent calls on UNAVAILABLE with backoff.
// Callbacks run on a gRPC thread; post into an EventLoop to touch loop-owned state.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
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

// How a handler answers a call: its reply is filled before this is called.
using SendReply = std::function<void(grpc::Status)>;

absl::Status FromGrpc(const grpc::Status& status);
grpc::Status ToGrpc(const absl::Status& status);

// Whether `presented` is the cluster `token` (any value when the token is empty),
// compared in constant time.
bool TokenMatches(std::string_view presented, const std::string& token);

// Binds a generated stub's async method, for RpcClient::Call.
#define ORB_RPC(Method)                                                 \
  [](auto* stub, auto* ctx, auto* req, auto* reply, auto callback) {    \
    stub->async()->Method(ctx, req, reply, std::move(callback));        \
  }

// How often a channel with calls open pings its peer; a peer that does not answer
// within as long again fails those calls (UNAVAILABLE).
inline constexpr int kKeepaliveMs = 5000;

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address);

// The process's timer for RPC retries (a loop thread of its own, started on first use).
EventLoop& RetryTimer();

struct CallOptions {
  std::chrono::milliseconds timeout{10000};
  // Retries on UNAVAILABLE, for idempotent calls only.
  int max_attempts = 1;
  std::chrono::milliseconds initial_backoff{100};

  // For idempotent calls whose loss would leak something (a lease, a bundle, an
  // object): up to 6 attempts over about 3 s.
  static CallOptions Retried() {
    CallOptions options;
    options.max_attempts = 6;
    return options;
  }
  // For idempotent calls to a server that may be restarting (the GCS, which Ray's
  // clients wait 60 s for): retried on UNAVAILABLE for about `window`.
  static CallOptions RetriedFor(std::chrono::seconds window) {
    CallOptions options;
    std::chrono::milliseconds waited{0};
    for (options.max_attempts = 1; waited < window; ++options.max_attempts) {
      waited += options.BackoffAfter(options.max_attempts);
    }
    return options;
  }
  // The wait before the attempt after `attempt` (1-based): initial_backoff, doubled
  // per attempt up to 32 times it (3.2 s).
  std::chrono::milliseconds BackoffAfter(int attempt) const {
    return initial_backoff * (1 << std::min(attempt - 1, 5));
  }
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

  // Cancels every call in flight and every retry due (the client is closing); their
  // callbacks run soon with CANCELLED.
  void CancelAll() {
    std::lock_guard<std::mutex> lock(calls_mu_);
    closing_ = true;
    for (grpc::ClientContext* context : in_flight_) context->TryCancel();
  }
  // Waits until no call is in flight or due for a retry; false on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(calls_mu_);
    return idle_cv_.wait_for(lock, timeout, [this] { return in_flight_.empty() && retries_due_ == 0; });
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
              // Again after a back-off, on the retry timer: never sleeping on a gRPC thread.
              {
                std::lock_guard<std::mutex> lock(calls_mu_);
                retries_due_++;
              }
              RetryTimer().RunAfter(options.BackoffAfter(attempt),
                                    [this, bound, request, done, options, attempt] {
                                      bool closing;
                                      {
                                        std::lock_guard<std::mutex> lock(calls_mu_);
                                        closing = closing_;
                                      }
                                      if (closing) {
                                        done(absl::CancelledError("the client closed"), Reply());
                                      } else {
                                        CallAttempt<Reply>(bound, request, done, options, attempt + 1);
                                      }
                                      std::lock_guard<std::mutex> lock(calls_mu_);
                                      retries_due_--;
                                      NotifyIfIdle();
                                    });
            } else {
              done(FromGrpc(status), std::move(call->reply));
            }
            std::lock_guard<std::mutex> lock(calls_mu_);
            in_flight_.erase(&call->context);
            NotifyIfIdle();
          });
  }

  // REQUIRES: calls_mu_ held.
  void NotifyIfIdle() {
    if (in_flight_.empty() && retries_due_ == 0) idle_cv_.notify_all();
  }

  std::string address_;
  std::string token_;
  std::unique_ptr<Stub> stub_;
  std::mutex calls_mu_;
  std::condition_variable idle_cv_;
  std::set<grpc::ClientContext*> in_flight_;  // guarded by calls_mu_
  int retries_due_ = 0;                       // guarded by calls_mu_
  bool closing_ = false;                      // guarded by calls_mu_
};

}  // namespace orb

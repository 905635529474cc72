// Client side of orb's RPCs (the server side is rpc_server.h), kept apart from
// component logic.
//
// RpcClient<Service> owns a channel and stub, attaches the token and a
// deadline to every call, and retries idempotent calls on UNAVAILABLE with backoff.
// Callbacks run on a gRPC thread; post into an EventLoop to touch loop-owned state.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
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
#include "common/call_stream_client.h"
#include "common/call_stream_protocol.h"
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

// A generated stub's async method, bound and named, for RpcClient::Call.
template <class AsyncCall>
struct RpcMethod {
  const char* name;  // "KvGet"
  AsyncCall call;
  template <class... Args>
  void operator()(Args&&... args) const {
    call(std::forward<Args>(args)...);
  }
};
template <class AsyncCall>
RpcMethod(const char*, AsyncCall) -> RpcMethod<AsyncCall>;

#define ORB_RPC(Method)                                                   \
  ::orb::RpcMethod {                                                      \
    #Method, [](auto* stub, auto* ctx, auto* req, auto* reply, auto callback) { \
      stub->async()->Method(ctx, req, reply, std::move(callback));        \
    }                                                                     \
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

  // A call that lasts as long as the work it waits for: a lease request queued until
  // resources free up, a task or method that runs as long as it likes, an item held
  // back until its reader catches up. No deadline short of a year: keepalive pings
  // notice a peer that stopped answering.
  static CallOptions UntilDone() {
    CallOptions options;
    options.timeout = std::chrono::hours(24 * 365);
    return options;
  }
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
    std::shared_ptr<StreamRoute> route;
    {
      std::lock_guard<std::mutex> lock(calls_mu_);
      closing_ = true;
      for (grpc::ClientContext* context : in_flight_) context->TryCancel();
      route = route_;
    }
    if (route) route->client->CancelAll();  // its callbacks take calls_mu_
  }
  // Waits until no call is in flight or due for a retry; false on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(calls_mu_);
    return idle_cv_.wait_for(lock, timeout,
                             [this] { return in_flight_.empty() && retries_due_ == 0 && stream_calls_ == 0; });
  }
  // Cancels what is in flight and waits for its callbacks to finish.
  bool Drain(std::chrono::milliseconds timeout) {
    CancelAll();
    return WaitIdle(timeout);
  }

  const std::string& address() const { return address_; }

  // Calls asynchronously; `done(status, reply)` runs on a gRPC thread (the call-stream
  // thread for a method routed over the call stream).
  template <class Reply, class Req, class Bound>
  void Call(Bound bound, const Req& request, std::function<void(const absl::Status&, Reply&&)> done,
            CallOptions options = {}) {
    CallVia<Reply>(bound, request, std::move(done), options, nullptr);
  }

  // Sends the calls of `methods` (names: "CreatePlacementGroup") over the call stream
  // to `endpoint` ("ip:port", a RouteStreamServer of the same services) instead of
  // gRPC; an empty `endpoint` routes nothing. A routed call whose connection fails
  // (UNAVAILABLE) is retried over gRPC when its options allow retries or the stream
  // never answered, and the route is marked broken (route_state) for its owner to look
  // the endpoint up again; a route that broke before it ever answered is not used.
  void RouteOverCallStream(const std::string& endpoint, std::set<std::string, std::less<>> methods) {
    std::shared_ptr<StreamRoute> route;
    if (!endpoint.empty()) {
      route = std::make_shared<StreamRoute>();
      route->client = std::make_shared<CallStreamClient>(endpoint, token_);
      route->methods = std::move(methods);
    }
    std::lock_guard<std::mutex> lock(calls_mu_);
    route_ = std::move(route);
  }
  enum class RouteState { kNone, kWorking, kBroken, kNeverWorked };
  // kBroken: it failed after some call came back over it; kNeverWorked: it failed first.
  RouteState route_state() {
    std::lock_guard<std::mutex> lock(calls_mu_);
    if (!route_) return RouteState::kNone;
    if (!route_->broken) return RouteState::kWorking;
    return route_->worked ? RouteState::kBroken : RouteState::kNeverWorked;
  }

  // Calls and waits. Must not be called on a thread that the reply needs (an EventLoop).
  template <class Reply, class Req, class Bound>
  absl::StatusOr<Reply> CallSync(Bound bound, const Req& request, CallOptions options = {}) {
    auto promise = std::make_shared<std::promise<absl::StatusOr<Reply>>>();
    auto future = promise->get_future();
    auto fell_back = std::make_shared<std::atomic<bool>>(false);
    bool routed = CallVia<Reply>(
        bound, request,
        [promise](const absl::Status& status, Reply&& reply) {
          if (status.ok()) {
            promise->set_value(std::move(reply));
          } else {
            promise->set_value(status);
          }
        },
        options, fell_back);
    // gRPC keeps a call's deadline itself; the call stream does not (its heartbeats
    // catch a dead peer, not a slow handler), so a call on the stream is waited for at
    // most as long. One that fell back to gRPC has gRPC's deadline and retries.
    if (!routed) return future.get();
    auto deadline = std::chrono::steady_clock::now() + options.timeout;
    if (std::shared_ptr<StreamRoute> route = RouteOf(bound.name)) {
      // Read the reply on this thread rather than be woken by the call-stream thread.
      route->client->Assist([&future] { return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready; },
                            std::min(deadline, std::chrono::steady_clock::now() + kAssistFor));
    }
    if (future.wait_until(deadline) != std::future_status::ready && !*fell_back) {
      return absl::DeadlineExceededError(std::string(bound.name) + " got no reply within " +
                                         std::to_string(options.timeout.count()) + " ms");
    }
    return future.get();
  }

 private:
  // Requests larger than this go over gRPC (a call-stream frame holds at most
  // call_stream::kMaxPayloadBytes, path included).
  static constexpr size_t kMaxRoutedRequestBytes = (64u << 20) - 4096;
  // How long a thread waiting for a routed call reads replies itself before it leaves
  // them to the call-stream thread (a long poll may take seconds).
  static constexpr std::chrono::milliseconds kAssistFor{50};
  struct StreamRoute {
    std::shared_ptr<CallStreamClient> client;
    std::set<std::string, std::less<>> methods;
    std::atomic<bool> broken{false};
    std::atomic<bool> worked{false};  // some call came back over it
  };

  // Calls over the call stream when `bound` is routed there (true), else over gRPC.
  template <class Reply, class Req, class Bound>
  bool CallVia(Bound bound, const Req& request, std::function<void(const absl::Status&, Reply&&)> done,
               CallOptions options, std::shared_ptr<std::atomic<bool>> fell_back) {
    if (std::shared_ptr<StreamRoute> route = RouteOf(bound.name)) {
      std::string bytes = request.SerializeAsString();
      if (bytes.size() <= kMaxRoutedRequestBytes) {
        StreamAttempt<Reply, Req>(std::move(route), bound, std::move(bytes), std::move(done), options,
                                  std::move(fell_back));
        return true;
      }
    }
    CallAttempt<Reply>(bound, std::make_shared<Req>(request), std::move(done), options, 1);
    return false;
  }

  std::shared_ptr<StreamRoute> RouteOf(std::string_view method) {
    std::lock_guard<std::mutex> lock(calls_mu_);
    if (!route_ || closing_ || route_->methods.find(method) == route_->methods.end()) return nullptr;
    if (route_->broken && !route_->worked) return nullptr;  // unreachable from here: gRPC it is
    return route_;
  }

  template <class Reply, class Req, class Bound>
  void StreamAttempt(std::shared_ptr<StreamRoute> route, Bound bound, std::string bytes,
                     std::function<void(const absl::Status&, Reply&&)> done, CallOptions options,
                     std::shared_ptr<std::atomic<bool>> fell_back) {
    {
      std::lock_guard<std::mutex> lock(calls_mu_);
      stream_calls_++;
    }
    std::string path = std::string("/") + Service::service_full_name() + "/" + bound.name;
    std::string payload = call_stream::EncodeRoute(path, bytes);
    auto finish = [this, route, bound, bytes = std::move(bytes), done = std::move(done), options, fell_back](
                      const absl::Status& status, std::string_view reply_bytes) {
      if (status.code() == absl::StatusCode::kUnavailable) {
        route->broken = true;
        // Again over gRPC when the call may be retried, or when the stream has never
        // answered anything (most likely its port is not reachable from here).
        if (options.max_attempts > 1 || !route->worked) {
          if (fell_back) *fell_back = true;
          auto request = std::make_shared<Req>();
          request->ParseFromString(bytes);
          CallAttempt<Reply>(bound, std::move(request), done, options, 1);
        } else {
          done(status, Reply());
        }
      } else if (!status.ok()) {
        done(status, Reply());
      } else {
        route->worked = true;
        Reply reply;
        if (reply.ParseFromArray(reply_bytes.data(), static_cast<int>(reply_bytes.size()))) {
          done(absl::OkStatus(), std::move(reply));
        } else {
          done(absl::InternalError(std::string("malformed reply to ") + bound.name), Reply());
        }
      }
      std::lock_guard<std::mutex> lock(calls_mu_);
      stream_calls_--;
      NotifyIfIdle();
    };
    route->client->Call(call_stream::kRoute, payload, std::move(finish));
  }

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
    if (in_flight_.empty() && retries_due_ == 0 && stream_calls_ == 0) idle_cv_.notify_all();
  }

  std::string address_;
  std::string token_;
  std::unique_ptr<Stub> stub_;
  std::mutex calls_mu_;
  std::condition_variable idle_cv_;
  std::set<grpc::ClientContext*> in_flight_;  // guarded by calls_mu_
  int retries_due_ = 0;                       // guarded by calls_mu_
  int stream_calls_ = 0;                      // guarded by calls_mu_
  std::shared_ptr<StreamRoute> route_;        // guarded by calls_mu_
  bool closing_ = false;                      // guarded by calls_mu_
};

}  // namespace orb

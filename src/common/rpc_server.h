// Server side of orb's RPCs, kept apart from component logic.
//
// A service is a class deriving from RpcService that lists its methods with
// ORB_SERVICE_METHOD(Method): each forwards to `handler_->HandleMethod(request, reply,
// send_reply)`, run on the service's event loop. Handlers never see gRPC server types
// beyond the reply they fill.
//
// Every service of a server is served through one generic gRPC handler, so that the
// cluster token (orb-token metadata) is checked before a request's body is read: gRPC
// reads a unary request whole before a typed service sees it, and so would buffer
// whatever a stranger sends. A request without the token is refused UNAUTHENTICATED
// from its metadata alone, and members' requests are capped in size
// (ServerLimits::max_message_bytes, RESOURCE_EXHAUSTED beyond it).
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/event_loop.h"
#include "common/metrics.h"
#include "common/rpc.h"

namespace orb {

// Where a service's handlers run and which token its callers must present.
struct ServiceContext {
  EventLoop* loop = nullptr;  // null: run handlers on the gRPC thread
  std::string token;          // empty: no authentication
};

// Counts a call refused for a missing or wrong token (metric rpc_rejected_unauthenticated).
void CountUnauthenticated();
// The latency histogram of `method` of `service` ("GcsService"): orb_rpc_server_latency_seconds.
HistogramSeries* RpcServerLatency(const std::string& service, const std::string& method);

class RpcService {
 public:
  // Answers one call: the request's bytes in, `done(status, reply bytes)` out.
  using Route = std::function<void(grpc::ByteBuffer* request, std::function<void(grpc::Status, grpc::ByteBuffer)> done)>;

  // `full_name`: the proto service's, e.g. "orb.rpc.GcsService".
  RpcService(std::string full_name, ServiceContext context);
  virtual ~RpcService() = default;

  const ServiceContext& context() const { return context_; }
  // The route for a gRPC method path ("/orb.rpc.GcsService/KvPut"), or null.
  const Route* Find(const std::string& path) const;
  // Every method path this service routes, in order.
  std::vector<std::string> paths() const;

 protected:
  struct RouteAdded {};
  // Serves `method` with `handler(request, reply, send_reply)` on the service's loop.
  template <class Req, class Reply, class Handler>
  RouteAdded Serve(const char* method, Handler handler);
  // The latency histogram of `method` (orb_rpc_server_latency_seconds{service,method}).
  HistogramSeries* LatencyOf(const std::string& method) const;

 private:
  std::string full_name_;
  ServiceContext context_;
  std::map<std::string, Route> routes_;
};

template <class Req, class Reply, class Handler>
RpcService::RouteAdded RpcService::Serve(const char* method, Handler handler) {
  EventLoop* loop = context_.loop;
  HistogramSeries* latency = LatencyOf(method);
  routes_["/" + full_name_ + "/" + method] = [loop, handler, latency](grpc::ByteBuffer* bytes, auto done) {
    auto start = std::chrono::steady_clock::now();
    auto request = std::make_shared<Req>();
    if (!grpc::SerializationTraits<Req>::Deserialize(bytes, request.get()).ok()) {
      return done(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed request"), grpc::ByteBuffer());
    }
    auto run = [request, handler, start, latency, done = std::move(done)]() mutable {
      auto reply = std::make_shared<Reply>();
      // The request lives until the reply is sent: handlers may answer later, from elsewhere.
      handler(*request, reply.get(), [request, reply, start, latency, done = std::move(done)](grpc::Status status) {
        latency->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        grpc::ByteBuffer out;
        bool own = false;
        if (status.ok()) status = grpc::SerializationTraits<Reply>::Serialize(*reply, &out, &own);
        done(status, std::move(out));
      });
    };
    if (loop) {
      loop->Post(std::move(run));
    } else {
      run();
    }
  };
  return {};
}

// Declares one method of a service class that forwards to
// `handler_->Handle<Method>(request, reply, send_reply)`.
#define ORB_SERVICE_METHOD(Method) ORB_SERVICE_METHOD_ON(Method, handler_)

// As ORB_SERVICE_METHOD, forwarding to `target->Handle<Method>` instead of handler_
// (`target` is evaluated at each call).
#define ORB_SERVICE_METHOD_ON(Method, target)                                                         \
  RouteAdded route_##Method##_ = Serve<rpc::Method##Request, rpc::Method##Reply>(                    \
      #Method, [this](const rpc::Method##Request& r, rpc::Method##Reply* rep, ::orb::SendReply send) { \
        (target)->Handle##Method(r, rep, std::move(send));                                           \
      });

struct ServerLimits {
  // The largest request accepted (gRPC's max receive message size); -1: no limit.
  int64_t max_message_bytes = -1;
};

// A running gRPC server and the port it bound.
struct StartedServer {
  std::unique_ptr<grpc::CallbackGenericService> router;  // serves `services`; outlives `server`
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};
// Starts a gRPC server on "host:port" (port 0 picks a free one) with the given services,
// which must outlive it. `unix_socket`, when not empty, is a path where the same
// services also listen. Errors name the cause (e.g. port taken).
absl::StatusOr<StartedServer> StartServer(const std::string& host, int port, const std::vector<RpcService*>& services,
                                          const std::string& unix_socket = "", ServerLimits limits = {});

}  // namespace orb

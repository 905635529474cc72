#include "common/call_stream_routes.h"

#include <arpa/inet.h>

#include <chrono>
#include <cstdlib>

namespace orb {

namespace cs = call_stream;

namespace {
// How long a reply may wait for a caller that does not read: replies are written by
// the thread that answers (a service's loop), which must not stall for long.
constexpr int kReplySendTimeoutSeconds = 5;
}  // namespace

bool ControlCallStreamEnabled() {
  const char* setting = std::getenv("ORB_CONTROL_CALL_STREAM");
  return !(setting && std::string(setting) == "0");
}

std::string CallStreamBeside(const std::string& address, int stream_port) {
  size_t colon = address.rfind(':');
  if (stream_port <= 0 || colon == std::string::npos) return "";
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  in6_addr numeric;
  bool v6 = ::inet_pton(AF_INET6, host.c_str(), &numeric) == 1;
  if (!v6 && ::inet_pton(AF_INET, host.c_str(), &numeric) != 1) return "";
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(stream_port);
}

absl::StatusOr<std::unique_ptr<RouteStreamServer>> RouteStreamServer::Start(const std::string& ip,
                                                                            std::vector<RpcService*> services,
                                                                            const std::string& token,
                                                                            ServerLimits limits) {
  auto routes = std::unique_ptr<RouteStreamServer>(new RouteStreamServer(std::move(services), limits));
  CallStreamServer::Options options;
  options.token = token;
  options.tcp_ip = ip;
  options.send_timeout_seconds = kReplySendTimeoutSeconds;
  auto server = CallStreamServer::Start(
      options, [r = routes.get()](uint8_t method, std::string_view payload, CallStreamServer::Responder responder) {
        r->Serve(method, payload, std::move(responder));
      });
  if (!server.ok()) return server.status();
  routes->server_ = std::move(*server);
  routes->thread_ = std::thread([r = routes.get()] {
    while (!r->stopping_) r->server_->PollOnce(-1);
  });
  return routes;
}

RouteStreamServer::~RouteStreamServer() {
  stopping_ = true;
  server_->Wake();
  if (thread_.joinable()) thread_.join();
}

void RouteStreamServer::Serve(uint8_t method, std::string_view payload, CallStreamServer::Responder responder) {
  std::string_view path, request;
  if (method != cs::kRoute || !cs::DecodeRoute(payload, &path, &request)) {
    return responder.Fail(absl::InvalidArgumentError(method != cs::kRoute
                                                         ? "unknown call-stream method " + std::to_string(method)
                                                         : std::string("malformed route: shorter than its path")));
  }
  const RpcService::Route* route = nullptr;
  std::string key(path);
  for (RpcService* service : services_) {
    if ((route = service->Find(key)) != nullptr) break;
  }
  if (route == nullptr) return responder.Fail(absl::UnimplementedError("no method " + key + " here"));
  if (limits_.max_message_bytes >= 0 && static_cast<int64_t>(request.size()) > limits_.max_message_bytes) {
    return responder.Fail(absl::ResourceExhaustedError("a request of " + std::to_string(request.size()) +
                                                       " bytes is over this server's limit of " +
                                                       std::to_string(limits_.max_message_bytes)));
  }
  grpc::Slice slice(request.data(), request.size());
  grpc::ByteBuffer bytes(&slice, 1);
  (*route)(&bytes, [responder](grpc::Status status, grpc::ByteBuffer reply) mutable {
    if (!status.ok()) return responder.Fail(FromGrpc(status));
    std::vector<grpc::Slice> slices;
    if (!reply.Dump(&slices).ok()) return responder.Fail(absl::InternalError("cannot read the reply"));
    if (slices.size() == 1) return responder.Reply(std::string_view(reinterpret_cast<const char*>(slices[0].begin()), slices[0].size()));
    std::string joined;
    for (const auto& s : slices) joined.append(reinterpret_cast<const char*>(s.begin()), s.size());
    responder.Reply(joined);
  });
}

}  // namespace orb

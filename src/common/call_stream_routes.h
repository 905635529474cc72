// A gRPC server's services served over the call stream as well
// (common/call_stream_protocol.h), for callers on the hot path of the control plane: a
// gRPC call hands its bytes between threads several times on each side, a call-stream
// call is one write and one read.
//
// A kRoute request names the method by its gRPC path and carries its serialized
// request; it runs exactly as the gRPC call would (RpcService's route: the service's
// loop, its latency metric, ServerLimits), and its reply or error goes back as a frame.
// An unknown path is answered UNIMPLEMENTED naming it. A thread of its own reads the
// connections; the token, bad frames and silent peers are the call stream's.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "common/call_stream_server.h"
#include "common/rpc_server.h"

namespace orb {

// False when ORB_CONTROL_CALL_STREAM=0: then the GCS and raylets serve no call stream,
// the GCS creates actors over gRPC, and clients route nothing (to compare the two).
bool ControlCallStreamEnabled();

// The call stream at `stream_port` on the host of `address` ("ip:port", "[v6]:port"),
// or empty when that host is not a numeric address (a name, such as a Kubernetes
// Service's, may forward only the gRPC port) or the port is not positive.
std::string CallStreamBeside(const std::string& address, int stream_port);

class RouteStreamServer {
 public:
  // Listens on TCP at `ip` (port chosen by the system). `services` outlive the server.
  static absl::StatusOr<std::unique_ptr<RouteStreamServer>> Start(const std::string& ip,
                                                                   std::vector<RpcService*> services,
                                                                   const std::string& token, ServerLimits limits = {});
  ~RouteStreamServer();
  RouteStreamServer(const RouteStreamServer&) = delete;
  RouteStreamServer& operator=(const RouteStreamServer&) = delete;

  int port() const { return server_->port(); }

 private:
  RouteStreamServer(std::vector<RpcService*> services, ServerLimits limits)
      : services_(std::move(services)), limits_(limits) {}
  void Serve(uint8_t method, std::string_view payload, CallStreamServer::Responder responder);

  const std::vector<RpcService*> services_;
  const ServerLimits limits_;
  std::unique_ptr<CallStreamServer> server_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace orb

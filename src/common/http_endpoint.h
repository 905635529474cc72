// A small HTTP server for what daemons show to operators and browsers: Prometheus's
// /metrics, the dashboard's pages and JSON. Handlers run on the server's own threads
// (post to an EventLoop for daemon state). The HTTP library stays out of this header.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace orb {

struct HttpRequest {
  std::string path;
  std::map<std::string, std::string> params;   // query parameters
  std::map<std::string, std::string> headers;  // lower-case names
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpEndpoint {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  HttpEndpoint();
  ~HttpEndpoint();  // stops the server
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  // Serves GET requests for `path` (exact), or every path under it when it ends in '/'.
  // Routes are tried in the order they were added.
  void Get(const std::string& path, Handler handler);
  // Starts serving on host:port (port 0 picks a free one) and returns the port bound.
  // Unavailable, naming the address, when it cannot listen.
  absl::StatusOr<int> Start(const std::string& host, int port);
  void Stop();
  int port() const { return port_; }  // 0 until started

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// A daemon's Prometheus endpoint: GET /metrics answers `text()` (called on an HTTP
// thread; an error answers 503 with its message). `port` as the daemons'
// --metrics-export-port: < 0 picks a free port, 0 serves nothing (nullptr), otherwise
// that port.
absl::StatusOr<std::unique_ptr<HttpEndpoint>> ServeMetrics(const std::string& host, int port,
                                                           std::function<absl::StatusOr<std::string>()> text);

// The content type Prometheus expects of the text format.
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace orb

// HTTP to the Kubernetes API server, behind an interface so that the client's logic
// (retries, errors, watches) is tested without a network and the library stays out of
// every other header.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "k8s_provider/kube_config.h"

namespace orb {

struct HttpRequest {
  std::string method;  // GET, POST, PUT, PATCH, DELETE
  std::string path;    // with its query, e.g. "/api/v1/namespaces/x/pods?labelSelector=a%3Db"
  std::string body;
  std::string content_type = "application/json";
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // One request and its whole reply. Unavailable when the server cannot be reached or
  // the connection broke before a reply; DeadlineExceeded after `timeout`.
  virtual absl::StatusOr<HttpResponse> Send(const HttpRequest& request, std::chrono::milliseconds timeout) = 0;
  // A streamed reply (a watch): `on_data` gets the body as it arrives, and returns false
  // to stop. Returns once the stream ends: the status code, and the body when the status
  // is not 200; Unavailable when the connection broke. `idle_timeout` bounds the wait for
  // each piece of data.
  virtual absl::StatusOr<HttpResponse> Stream(const HttpRequest& request, std::chrono::milliseconds idle_timeout,
                                     const std::function<bool(std::string_view)>& on_data) = 0;
  // Breaks a Stream in progress from another thread (it then returns soon).
  virtual void CancelStreams() = 0;
};

// The transport for `config` (http or https, token or client certificate, its CA).
absl::StatusOr<std::unique_ptr<HttpTransport>> NewHttpTransport(const KubeConfig& config);

}  // namespace orb

// A small client of the Kubernetes REST API: JSON in and out, errors as absl::Status
// with the API server's message, bounded retries with backoff and jitter, and watches.
//
// Retries: reads (GET), deletes and patches are retried on 429 (honouring Retry-After),
// 5xx, timeouts and broken connections, up to `max_attempts`. A create (POST) is retried
// only when the server said it did not act (429, 503); after any other failure the object
// may or may not exist, so the caller decides (the node provider looks for it by label).
// Error codes: 400/422 InvalidArgument, 401 Unauthenticated, 403 PermissionDenied, 404
// NotFound, 409 AlreadyExists (name taken) or Aborted (a conflicting update), 410
// OutOfRange (a watch's resourceVersion is too old: list again), 429/5xx Unavailable.
// HttpStatusOf(status) gives the HTTP code behind an error.
//
// Thread-safe: calls may come from several threads; a watch runs on its caller's thread.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "absl/status/statusor.h"
#include "k8s_provider/http_transport.h"

namespace orb {

struct KubeRetryPolicy {
  int max_attempts = 6;
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{5000};
  std::chrono::milliseconds request_timeout{10000};
};

// The HTTP status code an error from KubeClient carries (0 when none: the connection).
int HttpStatusOf(const absl::Status& status);

// "a=b,c in (d)" etc. for a query parameter: percent-encoded.
std::string UrlEncode(const std::string& text);

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK
  nlohmann::json object;
};

class KubeClient {
 public:
  using Sleeper = std::function<void(std::chrono::milliseconds)>;
  // `sleep` waits between retries (tests pass one that records instead of sleeping).
  KubeClient(std::unique_ptr<HttpTransport> transport, KubeRetryPolicy policy, Sleeper sleep = nullptr);

  absl::StatusOr<nlohmann::json> Get(const std::string& path);
  // GET of a text resource (a pod's log), retried as Get.
  absl::StatusOr<std::string> GetText(const std::string& path);
  absl::StatusOr<nlohmann::json> Create(const std::string& path, const nlohmann::json& object);
  // DELETE with DeleteOptions; a 404 is success (already gone).
  absl::Status Delete(const std::string& path, const nlohmann::json& options = nlohmann::json::object());
  absl::StatusOr<nlohmann::json> MergePatch(const std::string& path, const nlohmann::json& patch);

  // Watches `path` (a collection, with its selectors in the query) from
  // `resource_version`, calling `on_event` for each event until it returns false, the
  // server ends the stream (Ok), the stream breaks (Unavailable), or the version is too
  // old (OutOfRange: list again). An ERROR event becomes the error it carries.
  absl::Status Watch(const std::string& path, const std::string& resource_version,
                     std::chrono::seconds server_timeout, const std::function<bool(const WatchEvent&)>& on_event);
  // Ends a Watch in progress on another thread.
  void CancelWatch();

 private:
  absl::StatusOr<nlohmann::json> Call(const HttpRequest& request, bool retry_ambiguous);
  // The body of a 2xx reply, with the retries described above.
  absl::StatusOr<std::string> Send(const HttpRequest& request, bool retry_ambiguous);
  std::chrono::milliseconds Backoff(int attempt);

  std::unique_ptr<HttpTransport> transport_;
  const KubeRetryPolicy policy_;
  Sleeper sleep_;
  std::mutex rng_mu_;
  std::mt19937 rng_;
};

}  // namespace orb

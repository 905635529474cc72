#include "k8s_provider/kube_client.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace orb {
namespace {

constexpr char kHttpStatusPayload[] = "orb.io/http-status";

absl::Status WithHttpStatus(absl::Status status, int code) {
  status.SetPayload(kHttpStatusPayload, absl::Cord(std::to_string(code)));
  return status;
}

// The API server's Status object → absl::Status with its message.
absl::Status ErrorFromReply(const std::string& what, int code, const std::string& body) {
  std::string message;
  std::string reason;
  auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_object()) {
    message = json.value("message", "");
    reason = json.value("reason", "");
  }
  if (message.empty()) message = body.substr(0, 200);
  std::string text = absl::StrCat(what, ": HTTP ", code, reason.empty() ? "" : " " + reason, ": ", message);
  absl::Status status;
  switch (code) {
    case 400:
    case 422: status = absl::InvalidArgumentError(text); break;
    case 401: status = absl::UnauthenticatedError(text); break;
    case 403: status = absl::PermissionDeniedError(text); break;
    case 404: status = absl::NotFoundError(text); break;
    case 409: status = reason == "Conflict" ? absl::AbortedError(text) : absl::AlreadyExistsError(text); break;
    case 410: status = absl::OutOfRangeError(text); break;
    default: status = code == 429 || code >= 500 ? absl::UnavailableError(text) : absl::UnknownError(text);
  }
  return WithHttpStatus(status, code);
}

bool Retriable(int code) { return code == 429 || code >= 500; }
// The server says it did not carry the request out.
bool SurelyNotDone(int code) { return code == 429 || code == 503; }

}  // namespace

int HttpStatusOf(const absl::Status& status) {
  auto payload = status.GetPayload(kHttpStatusPayload);
  return payload ? std::atoi(std::string(*payload).c_str()) : 0;
}

std::string UrlEncode(const std::string& text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

KubeClient::KubeClient(std::unique_ptr<HttpTransport> transport, KubeRetryPolicy policy, Sleeper sleep)
    : transport_(std::move(transport)), policy_(policy), sleep_(std::move(sleep)), rng_(std::random_device{}()) {
  if (!sleep_) sleep_ = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
}

std::chrono::milliseconds KubeClient::Backoff(int attempt) {
  // Exponential with "equal jitter": half fixed, half random, so retries of many
  // clients spread out without any waiting less than half the step.
  auto step = policy_.initial_backoff * (1LL << std::min(attempt, 16));
  step = std::min<std::chrono::milliseconds>(step, policy_.max_backoff);
  std::lock_guard<std::mutex> lock(rng_mu_);
  std::uniform_int_distribution<int64_t> jitter(0, std::max<int64_t>(1, step.count() / 2));
  return std::chrono::milliseconds(step.count() / 2 + jitter(rng_));
}

absl::StatusOr<nlohmann::json> KubeClient::Call(const HttpRequest& request, bool retry_ambiguous) {
  auto body = Send(request, retry_ambiguous);
  if (!body.ok()) return body.status();
  if (body->empty()) return nlohmann::json::object();
  auto json = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InternalError(request.method + " " + request.path.substr(0, request.path.find('?')) +
                               ": the API server's reply is not JSON");
  }
  return json;
}

absl::StatusOr<std::string> KubeClient::GetText(const std::string& path) {
  return Send(HttpRequest{"GET", path, "", "application/json"}, /*retry_ambiguous=*/true);
}

absl::StatusOr<std::string> KubeClient::Send(const HttpRequest& request, bool retry_ambiguous) {
  const std::string what = request.method + " " + request.path.substr(0, request.path.find('?'));
  absl::Status last;
  for (int attempt = 0; attempt < policy_.max_attempts; ++attempt) {
    if (attempt > 0) sleep_(Backoff(attempt - 1));
    auto reply = transport_->Send(request, policy_.request_timeout);
    if (!reply.ok()) {
      last = reply.status();
      if (!retry_ambiguous) return last;  // it may have been done: the caller finds out
      spdlog::debug("{} failed ({}), retrying", what, last.ToString());
      continue;
    }
    if (reply->status >= 200 && reply->status < 300) return std::move(reply->body);
    last = ErrorFromReply(what, reply->status, reply->body);
    if (!Retriable(reply->status) || (!retry_ambiguous && !SurelyNotDone(reply->status))) return last;
    if (reply->status == 429 && reply->headers.count("retry-after")) {
      auto wait = std::chrono::seconds(std::atoi(reply->headers["retry-after"].c_str()));
      sleep_(std::min<std::chrono::milliseconds>(wait, policy_.max_backoff));
    }
    spdlog::debug("{} answered {}, retrying", what, reply->status);
  }
  return absl::Status(last.code(), absl::StrCat(last.message(), " (after ", policy_.max_attempts, " attempts)"));
}

absl::StatusOr<nlohmann::json> KubeClient::Get(const std::string& path) {
  return Call(HttpRequest{"GET", path, "", "application/json"}, /*retry_ambiguous=*/true);
}

absl::StatusOr<nlohmann::json> KubeClient::Create(const std::string& path, const nlohmann::json& object) {
  return Call(HttpRequest{"POST", path, object.dump(), "application/json"}, /*retry_ambiguous=*/false);
}

absl::Status KubeClient::Delete(const std::string& path, const nlohmann::json& options) {
  auto reply = Call(HttpRequest{"DELETE", path, options.dump(), "application/json"}, /*retry_ambiguous=*/true);
  if (!reply.ok() && reply.status().code() != absl::StatusCode::kNotFound) return reply.status();
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> KubeClient::MergePatch(const std::string& path, const nlohmann::json& patch) {
  return Call(HttpRequest{"PATCH", path, patch.dump(), "application/merge-patch+json"}, /*retry_ambiguous=*/true);
}

absl::Status KubeClient::Watch(const std::string& path, const std::string& resource_version,
                               std::chrono::seconds server_timeout,
                               const std::function<bool(const WatchEvent&)>& on_event) {
  std::string query = absl::StrCat(path, path.find('?') == std::string::npos ? "?" : "&",
                                    "watch=true&allowWatchBookmarks=true&timeoutSeconds=", server_timeout.count());
  if (!resource_version.empty()) query += "&resourceVersion=" + UrlEncode(resource_version);
  std::string pending;
  absl::Status error;
  bool stopped = false;
  auto on_data = [&](std::string_view data) {
    pending.append(data);
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      if (line.empty()) continue;
      auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!json.is_object() || !json.contains("type")) {
        error = absl::InternalError("a watch event is not JSON: " + line.substr(0, 100));
        return false;
      }
      WatchEvent event{json.value("type", ""), json.value("object", nlohmann::json::object())};
      if (event.type == "ERROR") {
        int code = event.object.value("code", 500);
        error = ErrorFromReply("watch " + path, code, event.object.dump());
        return false;
      }
      if (!on_event(event)) {
        stopped = true;
        return false;
      }
    }
    return true;
  };
  // The stream sends at least a bookmark or ends within server_timeout; allow slack.
  auto reply = transport_->Stream(HttpRequest{"GET", query, "", "application/json"}, server_timeout + std::chrono::seconds(10),
                                  on_data);
  if (!error.ok()) return error;
  if (stopped) return absl::OkStatus();
  if (!reply.ok()) return reply.status();
  if (reply->status != 200 && reply->status != 0) return ErrorFromReply("watch " + path, reply->status, reply->body);
  return absl::OkStatus();
}

void KubeClient::CancelWatch() { transport_->CancelStreams(); }

}  // namespace orb

#include "common/http_endpoint.h"

#include <httplib.h>

#include <cctype>
#include <thread>

namespace orb {

struct HttpEndpoint::Impl {
  httplib::Server server;
  std::thread thread;
};

HttpEndpoint::HttpEndpoint() : impl_(std::make_unique<Impl>()) {
  // Few, short requests (a scrape every few seconds, a browser): a small pool suffices.
  impl_->server.new_task_queue = [] { return new httplib::ThreadPool(2); };
  impl_->server.set_keep_alive_timeout(5);
}

HttpEndpoint::~HttpEndpoint() { Stop(); }

void HttpEndpoint::Get(const std::string& path, Handler handler) {
  std::string pattern = path;
  if (!pattern.empty() && pattern.back() == '/') pattern += ".*";
  impl_->server.Get(pattern, [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    HttpRequest request;
    request.path = req.path;
    for (const auto& [k, v] : req.params) request.params[k] = v;
    for (const auto& [k, v] : req.headers) {
      std::string name = k;
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request.headers[name] = v;
    }
    HttpResponse response = handler(request);
    res.status = response.status;
    res.set_content(response.body, response.content_type.c_str());
  });
}

absl::StatusOr<int> HttpEndpoint::Start(const std::string& host, int port) {
  int bound = port == 0 ? impl_->server.bind_to_any_port(host.c_str())
                        : (impl_->server.bind_to_port(host.c_str(), port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError("cannot serve HTTP on " + host + ":" + std::to_string(port) +
                                  " (address in use or not local?)");
  }
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  port_ = bound;
  return bound;
}

void HttpEndpoint::Stop() {
  if (!impl_->thread.joinable()) return;
  impl_->server.stop();
  impl_->thread.join();
}

absl::StatusOr<std::unique_ptr<HttpEndpoint>> ServeMetrics(const std::string& host, int port,
                                                           std::function<absl::StatusOr<std::string>()> text) {
  if (port == 0) return nullptr;
  auto endpoint = std::make_unique<HttpEndpoint>();
  endpoint->Get("/metrics", [text = std::move(text)](const HttpRequest&) {
    HttpResponse response;
    absl::StatusOr<std::string> body = text();
    if (!body.ok()) {
      response.status = 503;
      response.body = std::string(body.status().message()) + "\n";
      return response;
    }
    response.content_type = kPrometheusContentType;
    response.body = std::move(*body);
    return response;
  });
  auto bound = endpoint->Start(host, port < 0 ? 0 : port);
  if (!bound.ok()) return bound.status();
  return endpoint;
}

}  // namespace orb

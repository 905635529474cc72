// HttpTransport over cpp-httplib (Debian's libcpp-httplib, built with OpenSSL).
#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "k8s_provider/http_transport.h"

namespace orb {
namespace {

struct Endpoint {
  bool https = false;
  std::string host;
  int port = 0;
};

absl::StatusOr<Endpoint> ParseServer(const std::string& server) {
  Endpoint e;
  std::string rest;
  if (server.rfind("https://", 0) == 0) {
    e.https = true;
    rest = server.substr(8);
  } else if (server.rfind("http://", 0) == 0) {
    rest = server.substr(7);
  } else {
    return absl::InvalidArgumentError("the API server address '" + server + "' is not http:// or https://");
  }
  rest = rest.substr(0, rest.find('/'));
  size_t colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
    e.host = rest.substr(0, colon);
    e.port = std::atoi(rest.substr(colon + 1).c_str());
  } else {
    e.host = rest;
    e.port = e.https ? 443 : 80;
  }
  if (!e.host.empty() && e.host.front() == '[') e.host = e.host.substr(1, e.host.size() - 2);
  if (e.host.empty() || e.port <= 0 || e.port > 65535) {
    return absl::InvalidArgumentError("the API server address '" + server + "' has no valid host:port");
  }
  return e;
}

// OpenSSL objects from PEM text; the caller owns them.
X509* CertFromPem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

EVP_PKEY* KeyFromPem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return key;
}

absl::StatusOr<X509_STORE*> StoreFromPem(const std::string& pem) {
  X509_STORE* store = X509_STORE_new();
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);
    X509_free(cert);
    added++;
  }
  BIO_free(bio);
  if (added == 0) {
    X509_STORE_free(store);
    return absl::InvalidArgumentError("the cluster's CA data holds no PEM certificate");
  }
  return store;
}

absl::Status StatusOfError(httplib::Error error, const std::string& what) {
  std::string why = absl::StrCat(what, ": ", httplib::to_string(error));
  if (error == httplib::Error::ConnectionTimeout) return absl::DeadlineExceededError(why);
  if (error == httplib::Error::Read) return absl::UnavailableError(why + " (connection closed or timed out)");
  if (error == httplib::Error::SSLServerVerification || error == httplib::Error::SSLLoadingCerts) {
    return absl::UnauthenticatedError(why);
  }
  return absl::UnavailableError(why);
}

class HttplibTransport : public HttpTransport {
 public:
  explicit HttplibTransport(KubeConfig config, Endpoint endpoint) : config_(std::move(config)), endpoint_(endpoint) {}

  absl::Status Init() {
    auto calls = NewClient();
    if (!calls.ok()) return calls.status();
    calls_ = std::move(*calls);
    auto stream = NewClient();
    if (!stream.ok()) return stream.status();
    stream_ = std::move(*stream);
    return absl::OkStatus();
  }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request, std::chrono::milliseconds timeout) override {
    std::lock_guard<std::mutex> lock(calls_mu_);
    calls_->set_read_timeout(timeout);
    calls_->set_write_timeout(timeout);
    httplib::Request req = ToHttplib(request);
    HttpResponse out;
    httplib::Result result = calls_->send(req);
    if (!result) return StatusOfError(result.error(), request.method + " " + PathOnly(request.path));
    out.status = result->status;
    out.body = std::move(result->body);
    for (const auto& [name, value] : result->headers) out.headers[Lower(name)] = value;
    return out;
  }

  absl::StatusOr<HttpResponse> Stream(const HttpRequest& request, std::chrono::milliseconds idle_timeout,
                             const std::function<bool(std::string_view)>& on_data) override {
    std::lock_guard<std::mutex> lock(stream_mu_);
    stream_->set_read_timeout(idle_timeout);
    httplib::Request req = ToHttplib(request);
    int status = 0;
    req.response_handler = [&](const httplib::Response& response) {
      status = response.status;
      return true;
    };
    std::string error_body;
    req.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
      if (status != 200) {
        error_body.append(data, length);
        return true;
      }
      return on_data(std::string_view(data, length));
    };
    httplib::Result result = stream_->send(req);
    if (!result && result.error() != httplib::Error::Canceled) {
      return StatusOfError(result.error(), "watch " + PathOnly(request.path));
    }
    HttpResponse out;
    out.status = status;
    out.body = std::move(error_body);
    return out;
  }

  void CancelStreams() override { stream_->stop(); }

 private:
  static std::string Lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  static std::string PathOnly(const std::string& path) { return path.substr(0, path.find('?')); }

  httplib::Request ToHttplib(const HttpRequest& request) const {
    httplib::Request req;
    req.method = request.method;
    req.path = request.path;
    req.body = request.body;
    req.headers.emplace("Accept", "application/json, */*");  // a pod log is text
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT" || request.method == "PATCH") {
      req.headers.emplace("Content-Type", request.content_type);
    }
    req.headers.emplace("User-Agent", "orb-autoscaler");
    return req;
  }

  absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> NewClient() {
    std::unique_ptr<httplib::ClientImpl> client;
    if (endpoint_.https) {
      std::unique_ptr<httplib::SSLClient> ssl;
      if (!config_.client_cert_pem.empty()) {
        X509* cert = CertFromPem(config_.client_cert_pem);
        EVP_PKEY* key = KeyFromPem(config_.client_key_pem);
        if (!cert || !key) {
          if (cert) X509_free(cert);
          if (key) EVP_PKEY_free(key);
          return absl::InvalidArgumentError("the client certificate or key is not valid PEM");
        }
        ssl = std::make_unique<httplib::SSLClient>(endpoint_.host, endpoint_.port, cert, key);
        X509_free(cert);
        EVP_PKEY_free(key);
      } else {
        ssl = std::make_unique<httplib::SSLClient>(endpoint_.host, endpoint_.port);
      }
      if (!config_.ca_pem.empty()) {
        auto store = StoreFromPem(config_.ca_pem);
        if (!store.ok()) return store.status();
        ssl->set_ca_cert_store(*store);  // the client owns it from here
      }
      ssl->enable_server_certificate_verification(!config_.insecure_skip_tls_verify);
      client = std::move(ssl);
    } else {
      client = std::make_unique<httplib::ClientImpl>(endpoint_.host, endpoint_.port);
    }
    if (!config_.bearer_token.empty()) client->set_bearer_token_auth(config_.bearer_token);
    client->set_connection_timeout(std::chrono::seconds(5));
    client->set_url_encode(false);  // paths arrive encoded
    client->set_keep_alive(true);
    return client;
  }

  const KubeConfig config_;
  const Endpoint endpoint_;
  std::mutex calls_mu_;
  std::unique_ptr<httplib::ClientImpl> calls_;
  std::mutex stream_mu_;
  std::unique_ptr<httplib::ClientImpl> stream_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpTransport>> NewHttpTransport(const KubeConfig& config) {
  auto endpoint = ParseServer(config.server);
  if (!endpoint.ok()) return endpoint.status();
  auto transport = std::make_unique<HttplibTransport>(config, *endpoint);
  if (auto s = transport->Init(); !s.ok()) return s;
  return std::unique_ptr<HttpTransport>(std::move(transport));
}

}  // namespace orb

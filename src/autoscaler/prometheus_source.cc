#include "autoscaler/prometheus_source.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "k8s_provider/http_transport.h"
#include "k8s_provider/kube_client.h"

namespace orb::autoscaler {
namespace {

constexpr std::chrono::seconds kQueryTimeout{5};

class PrometheusSource : public UtilisationSource {
 public:
  PrometheusSource(PrometheusConfig config, std::unique_ptr<HttpTransport> http)
      : config_(std::move(config)), http_(std::move(http)) {}

  absl::StatusOr<std::map<std::string, double>> Read() override {
    HttpRequest request;
    request.method = "GET";
    request.path = "/api/v1/query?query=" + UrlEncode(config_.query);
    auto reply = http_->Send(request, kQueryTimeout);
    if (!reply.ok()) return absl::UnavailableError("Prometheus at " + config_.url + ": " + reply.status().ToString());
    if (reply->status != 200) {
      return absl::UnavailableError("Prometheus at " + config_.url + " answered " + std::to_string(reply->status) + ": " +
                                    reply->body.substr(0, 200));
    }
    return ParsePrometheusVector(reply->body, config_.type_label);
  }

 private:
  PrometheusConfig config_;
  std::unique_ptr<HttpTransport> http_;
};

}  // namespace

absl::StatusOr<std::map<std::string, double>> ParsePrometheusVector(const std::string& body, const std::string& label) {
  auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return absl::InvalidArgumentError("Prometheus's reply is not JSON");
  if (json.value("status", "") != "success") {
    return absl::InvalidArgumentError("Prometheus query failed: " + json.value("error", std::string("unknown error")));
  }
  const auto& data = json["data"];
  if (data.value("resultType", "") != "vector") {
    return absl::InvalidArgumentError("the utilisation query must give an instant vector, not " +
                                      data.value("resultType", std::string("nothing")));
  }
  std::map<std::string, double> out;
  for (const auto& sample : data.value("result", nlohmann::json::array())) {
    const auto& value = sample["value"];
    if (!value.is_array() || value.size() != 2 || !value[1].is_string()) continue;
    double v = std::strtod(value[1].get<std::string>().c_str(), nullptr);
    if (!std::isfinite(v)) continue;
    std::string key = sample["metric"].value(label, "");
    out[key] = std::max(out.count(key) ? out[key] : v, v);  // several samples of a type: the highest
  }
  return out;
}

absl::StatusOr<std::unique_ptr<UtilisationSource>> NewPrometheusSource(const PrometheusConfig& config) {
  KubeConfig http;
  http.server = config.url;
  auto transport = NewHttpTransport(http);
  if (!transport.ok()) return transport.status();
  return std::unique_ptr<UtilisationSource>(std::make_unique<PrometheusSource>(config, std::move(*transport)));
}

}  // namespace orb::autoscaler

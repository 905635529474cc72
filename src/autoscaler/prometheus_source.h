// Utilisation per node type from a Prometheus server: an instant query
// (GET /api/v1/query?query=...) whose result is a vector of samples labelled by node
// type (e.g. `avg by (node_type) (DCGM_FI_DEV_GPU_UTIL)`), in percent.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "autoscaler/metric_rules.h"

namespace orb::autoscaler {

class UtilisationSource {
 public:
  virtual ~UtilisationSource() = default;
  // Percent by node type.
  virtual absl::StatusOr<std::map<std::string, double>> Read() = 0;
};

absl::StatusOr<std::unique_ptr<UtilisationSource>> NewPrometheusSource(const PrometheusConfig& config);

// The vector of an /api/v1/query reply as {label value: number}; a sample without the
// label counts for "" (every type). InvalidArgument for an error reply or another type.
absl::StatusOr<std::map<std::string, double>> ParsePrometheusVector(const std::string& body, const std::string& label);

}  // namespace orb::autoscaler

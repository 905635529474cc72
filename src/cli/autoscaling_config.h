// `orb start --head --autoscaling-config FILE`: the node types an autoscaler may launch
// (Ray's cluster config `available_node_types`, YAML or JSON), stored in the GCS so
// that work only such a node could run waits for one instead of failing.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace orb::cli {

// Reads `path`, checks its node types, and stores them in the GCS at `gcs_address`.
// InvalidArgument naming the file and the problem.
absl::Status StoreAutoscalingConfig(const std::string& path, const std::string& gcs_address, const std::string& token);

}  // namespace orb::cli

// Loads the shared libraries named by a job's code_search_path, so that the
// ORB_REMOTE registrations inside them run in this worker.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace orb {

// `path` is a ':'-separated list of .so files or directories (every .so inside is
// loaded). Returns the first failure, after trying everything.
absl::Status LoadCodeSearchPath(const std::string& path);

}  // namespace orb

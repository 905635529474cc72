// Logging setup for daemons and workers: spdlog, to a file in the session's logs/
// directory or to stderr.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace orb {

// Sends the default logger to `path` (stderr when empty), prefixed with `component`.
void InitLogging(const std::string& component, const std::string& path);

}  // namespace orb

// Logging setup for daemons and workers: spdlog, to a file in the session's logs/
// directory or to stderr. Lines name the IDs they are about as `job_id=...`,
// `actor_id=...`, `worker_id=...`, `task_id=...` (hex), so that they can be searched;
// with ORB_LOG_FORMAT=json each line is a JSON object and those IDs are fields of it.
#pragma once

#include <spdlog/spdlog.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orb {

// Sends the default logger to `path` (stderr when empty), prefixed with `component`.
// ORB_LOG_LEVEL sets the level, ORB_LOG_FORMAT=json the format.
void InitLogging(const std::string& component, const std::string& path);

// The `<name>_id=<hex>` tokens of a log message, in order ("job_id", "01000000").
std::vector<std::pair<std::string, std::string>> IdFields(std::string_view text);

}  // namespace orb

#include "common/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace orb {

void InitLogging(const std::string& component, const std::string& path) {
  std::shared_ptr<spdlog::logger> logger;
  try {
    if (!path.empty()) logger = spdlog::basic_logger_mt(component + "_file", path);
  } catch (const spdlog::spdlog_ex&) {
    logger = nullptr;
  }
  if (!logger) logger = spdlog::stderr_logger_mt(component + "_stderr");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [" + component + " %P] [%l] %v");
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  const char* level = std::getenv("ORB_LOG_LEVEL");
  if (level) spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace orb

// The logger behind ORBLOG: one spdlog logger for user code, to stderr (a worker's
// stderr is its log file), whose lines carry the current task and actor.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>

#include "orb/api.h"
#include "orb/logging.h"

namespace orb {
namespace {

OrbLoggerLevel ThresholdFromEnv() {
  const char* env = std::getenv("ORB_USER_LOG_LEVEL");
  std::string level = env ? env : "info";
  if (level == "debug") return OrbLoggerLevel::DEBUG;
  if (level == "warning" || level == "warn") return OrbLoggerLevel::WARNING;
  if (level == "error") return OrbLoggerLevel::ERROR;
  if (level == "fatal") return OrbLoggerLevel::FATAL;
  return OrbLoggerLevel::INFO;
}

spdlog::logger& UserLogger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto made = std::make_shared<spdlog::logger>("user", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    made->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [user %P] [%l] %v");
    made->set_level(spdlog::level::trace);  // the threshold is ours
    made->flush_on(spdlog::level::trace);
    return made;
  }();
  return *logger;
}

spdlog::level::level_enum SpdlogLevel(OrbLoggerLevel level) {
  switch (level) {
    case OrbLoggerLevel::DEBUG: return spdlog::level::debug;
    case OrbLoggerLevel::INFO: return spdlog::level::info;
    case OrbLoggerLevel::WARNING: return spdlog::level::warn;
    case OrbLoggerLevel::ERROR: return spdlog::level::err;
    case OrbLoggerLevel::FATAL: return spdlog::level::critical;
  }
  return spdlog::level::info;
}

// "[task 3f9a.. actor 77c1..] " in a task or actor; empty in a driver outside them.
std::string Context() {
  if (!IsInitialized()) return "";
  std::string task = internal::CurrentTaskId(), actor = internal::CurrentActorId();
  std::string out;
  if (!task.empty()) out += "task " + task;
  if (!actor.empty()) out += (out.empty() ? "" : " ") + ("actor " + actor);
  return out.empty() ? "" : "[" + out + "] ";
}

class LineLogger : public OrbLogger {
 public:
  LineLogger(const char* file, int line, OrbLoggerLevel level) : level_(level) {
    std::string path = file ? file : "";
    stream_ << Context() << path.substr(path.rfind('/') + 1) << ":" << line << " ";
  }
  ~LineLogger() override {
    UserLogger().log(SpdlogLevel(level_), stream_.str());
    if (level_ == OrbLoggerLevel::FATAL) std::abort();
  }
  bool IsEnabled() const override { return true; }

 protected:
  std::ostream& Stream() override { return stream_; }

 private:
  OrbLoggerLevel level_;
  std::ostringstream stream_;
};

}  // namespace

bool IsLevelEnabled(OrbLoggerLevel level) {
  static const OrbLoggerLevel threshold = ThresholdFromEnv();
  return level >= threshold;
}

std::unique_ptr<OrbLogger> CreateOrbLogger(const char* file_name, int line_number, OrbLoggerLevel level) {
  return std::make_unique<LineLogger>(file_name, line_number, level);
}

}  // namespace orb

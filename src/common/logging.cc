#include "common/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>

namespace orb {
namespace {

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

// One JSON object per line: time, level, component, pid, message, and each
// `<name>_id=<value>` token of the message (job_id, actor_id, worker_id, task_id, ...)
// as a field of its own, for log pipelines to filter on.
class JsonFormatter : public spdlog::formatter {
 public:
  explicit JsonFormatter(std::string component) : component_(std::move(component)) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line = "{\"time\":";
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm utc;
    ::gmtime_r(&secs, &utc);
    char stamp[40];
    std::snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                  utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(ms % 1000));
    AppendJsonString(stamp, &line);
    line += ",\"level\":";
    auto level = spdlog::level::to_string_view(msg.level);
    AppendJsonString(std::string_view(level.data(), level.size()), &line);
    line += ",\"component\":";
    AppendJsonString(component_, &line);
    line += ",\"pid\":" + std::to_string(::getpid());
    std::string_view text(msg.payload.data(), msg.payload.size());
    line += ",\"message\":";
    AppendJsonString(text, &line);
    for (const auto& [key, value] : IdFields(text)) {
      line += ",";
      AppendJsonString(key, &line);
      line += ":";
      AppendJsonString(value, &line);
    }
    line += "}\n";
    dest.append(line.data(), line.data() + line.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(component_); }

 private:
  std::string component_;
};

}  // namespace

std::vector<std::pair<std::string, std::string>> IdFields(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (size_t eq = text.find("_id="); eq != std::string_view::npos; eq = text.find("_id=", eq + 4)) {
    size_t start = eq;
    while (start > 0 && (std::isalnum(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == '_')) --start;
    size_t end = eq + 4;
    while (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end]))) ++end;
    if (start == eq || end == eq + 4) continue;
    fields.emplace_back(std::string(text.substr(start, eq + 3 - start)), std::string(text.substr(eq + 4, end - eq - 4)));
  }
  return fields;
}

void InitLogging(const std::string& component, const std::string& path) {
  std::shared_ptr<spdlog::logger> logger;
  try {
    if (!path.empty()) logger = spdlog::basic_logger_mt(component + "_file", path);
  } catch (const spdlog::spdlog_ex&) {
    logger = nullptr;
  }
  if (!logger) logger = spdlog::stderr_logger_mt(component + "_stderr");
  const char* format = std::getenv("ORB_LOG_FORMAT");
  if (format && std::string(format) == "json") {
    logger->set_formatter(std::make_unique<JsonFormatter>(component));
  } else {
    logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [" + component + " %P] [%l] %v");
  }
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  const char* level = std::getenv("ORB_LOG_LEVEL");
  if (level) spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace orb

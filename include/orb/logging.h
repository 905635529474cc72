// Logging from user code, to the log of the process it runs in: a worker's log file in
// the session's logs/ directory (where `orb` daemons log too), or a driver's stderr.
// Each line names the task and actor it was written from.
//
//   ORBLOG(INFO) << "loaded " << n << " rows";
//   // [2026-12-01 10:00:00.123] [user 4242] [info] [task 3f9a.. actor 77c1..] main.cc:12 loaded 10 rows
//
// Levels: DEBUG, INFO (the default threshold; ORB_USER_LOG_LEVEL=debug|info|warning|error
// changes it), WARNING, ERROR, FATAL (logs, then aborts the process). Thread-safe.
#pragma once

#include <memory>
#include <ostream>

namespace orb {

enum class OrbLoggerLevel { DEBUG = -1, INFO = 0, WARNING = 1, ERROR = 2, FATAL = 3 };

// One log line being written; it is emitted when destroyed.
class OrbLogger {
 public:
  virtual ~OrbLogger() = default;
  virtual bool IsEnabled() const = 0;
  template <class T>
  OrbLogger& operator<<(const T& value) {
    if (IsEnabled()) Stream() << value;
    return *this;
  }

 protected:
  virtual std::ostream& Stream() = 0;
};

std::unique_ptr<OrbLogger> CreateOrbLogger(const char* file_name, int line_number, OrbLoggerLevel level);
bool IsLevelEnabled(OrbLoggerLevel level);

}  // namespace orb

// ORBLOG(INFO) << ...; as Ray's RAYLOG. ORB_LOG is the same.
#define ORBLOG(level)                                         \
  if (::orb::IsLevelEnabled(::orb::OrbLoggerLevel::level)) \
  *::orb::CreateOrbLogger(__FILE__, __LINE__, ::orb::OrbLoggerLevel::level)
#define ORB_LOG(level) ORBLOG(level)

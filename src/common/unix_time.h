// Wall-clock time since the Unix epoch, for what the state API, the timeline and the
// tables record (start and end times). Not for measuring durations: use steady_clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace orb {

inline int64_t UnixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline int64_t UnixNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace orb

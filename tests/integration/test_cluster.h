// Helpers for integration tests: one embedded cluster per test binary, and waiting on
// conditions with a deadline (never fixed sleeps).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

#include "orb/api.h"

namespace orb::testing {

// Starts the embedded cluster on first use with `config`; later calls reuse it.
inline void EnsureCluster(const Config& config = Config()) {
  if (!orb::IsInitialized()) orb::Init(config);
}

inline bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                    std::chrono::milliseconds poll = std::chrono::milliseconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(poll);
  }
  return condition();
}

}  // namespace orb::testing

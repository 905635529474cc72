// Waiting in tests: polls a condition until it holds or a limit passes.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace orb::testing {

// Whether `condition` held within `timeout`, polled every `poll` (and once more at the end).
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

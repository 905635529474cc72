// Threads that run queued functions for local mode: `slots` of them at once. An
// executor that may grow lets a function that waits (orb::Get inside a task) hand its
// slot to another thread, so that work it waits for can run; one that may not (an
// actor's) keeps order instead. Stopping drops queued work and lets running functions
// finish on their own: a task that never returns does not hold up Shutdown. Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

namespace orb {

class LocalExecutor {
 public:
  enum class Growth { kWhileBlocked, kNever };
  LocalExecutor(int slots, Growth growth);
  ~LocalExecutor();  // Stop()
  LocalExecutor(const LocalExecutor&) = delete;
  LocalExecutor& operator=(const LocalExecutor&) = delete;

  void Post(std::function<void()> fn);
  void Stop();
  // Waits until no function runs; false if one still does after `timeout`.
  bool WaitIdle(std::chrono::milliseconds timeout);

  // Around a wait on this thread: if it runs on a growing executor, another thread may
  // take its slot meanwhile. No-ops elsewhere.
  static void Blocked();
  static void Unblocked();

 private:
  struct State;
  static void StartThread(const std::shared_ptr<State>& state);
  static void Work(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_;
};

}  // namespace orb

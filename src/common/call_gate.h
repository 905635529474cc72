// Admits up to `limit` calls at once: a concurrent actor's calls in flight, which count
// against its max_concurrency whether they hold a thread or not (a deferred async call
// holds none while its coroutine runs). A call waits only while the limit is reached.
#pragma once

#include <condition_variable>
#include <mutex>

namespace orb {

class CallGate {
 public:
  explicit CallGate(int limit) : free_(limit < 1 ? 1 : limit) {}
  CallGate(const CallGate&) = delete;
  CallGate& operator=(const CallGate&) = delete;

  // Waits for a free place and takes it.
  void Enter() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  // Whether a call would enter now.
  bool HasRoom() {
    std::lock_guard<std::mutex> lock(mu_);
    return free_ > 0;
  }
  // A call that entered has ended: its place is free.
  void Leave() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;  // guarded by mu_
};

}  // namespace orb

// Up to a set number of threads running queued functions (an actor's concurrent calls,
// the object spiller's disk work). Threads start as work needs them — one is added when
// work is queued and no thread is free, up to the limit — so a large limit costs nothing
// until the work comes. The functions queued when it is destroyed run first.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace orb {

class ThreadPool {
 public:
  explicit ThreadPool(int max_threads) : max_threads_(max_threads < 1 ? 1 : max_threads) {}
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(fn));
      if (queue_.size() > idle_ && threads_.size() < max_threads_) threads_.emplace_back([this] { Work(); });
    }
    cv_.notify_one();
  }

  size_t threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_.size();
  }

 private:
  void Work() {
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ++idle_;
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        --idle_;
        if (queue_.empty()) return;
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      fn();
    }
  }

  const size_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  size_t idle_ = 0;                          // threads waiting for work; guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;         // guarded by mu_
};

}  // namespace orb

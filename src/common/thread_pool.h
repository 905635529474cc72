// Up to a set number of threads running queued functions (an actor's concurrent calls,
// the object spiller's disk work). Threads start as work needs them, so a large limit
// costs nothing until the work comes: by default one is added when work is queued and no
// thread is free. With `grow_every`, a pool whose functions mostly end quickly (an async
// actor's calls, which hand their coroutines to the event loop) adds a thread only when
// work has waited a whole `grow_every` with no free thread and none taken: work behind
// blocked threads gets one within that time, while a stream of quick work, whose threads
// keep taking it, does not start a thread per item. The functions queued when it is
// destroyed run first.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace orb {

class ThreadPool {
 public:
  // `may_grow` (with grow_every; null: always): whether a thread added now could take work
  // (false while what the work waits for is elsewhere, as a full CallGate); it must not
  // call into the pool.
  explicit ThreadPool(int max_threads, std::chrono::microseconds grow_every = std::chrono::microseconds(0),
                      std::function<bool()> may_grow = nullptr)
      : max_threads_(max_threads < 1 ? 1 : max_threads), grow_every_(grow_every), may_grow_(std::move(may_grow)) {}
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    grow_cv_.notify_all();
    if (grower_.joinable()) grower_.join();  // first: it may add to threads_
    for (auto& t : threads_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(fn));
      if (Backlogged()) {
        if (threads_.empty() || grow_every_.count() == 0) {
          threads_.emplace_back([this] { Work(); });
        } else {
          if (!grower_.joinable()) grower_ = std::thread([this] { Grow(); });
          grow_cv_.notify_one();
        }
      }
    }
    cv_.notify_one();
  }

  size_t threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_.size();
  }

 private:
  // Work waits that no free thread will take, and a thread may still be added. REQUIRES: mu_.
  bool Backlogged() const { return queue_.size() > idle_ && threads_.size() < max_threads_; }

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
        ++taken_;
      }
      fn();
    }
  }

  // With grow_every: adds a thread each grow_every in which the pool stayed backlogged and
  // its threads took no work (they are blocked, not just busy).
  void Grow() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      if (!Backlogged()) {
        grow_cv_.wait(lock);
        continue;
      }
      uint64_t taken = taken_;
      auto until = std::chrono::steady_clock::now() + grow_every_;
      grow_cv_.wait_until(lock, until, [this] { return stopping_; });  // Posts meanwhile do not hurry it
      if (!stopping_ && Backlogged() && taken_ == taken && (!may_grow_ || may_grow_())) {
        threads_.emplace_back([this] { Work(); });
      }
    }
  }

  const size_t max_threads_;
  const std::chrono::microseconds grow_every_;
  const std::function<bool()> may_grow_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // work queued, or stopping
  std::condition_variable grow_cv_;  // the pool may be backlogged, or stopping
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  size_t idle_ = 0;                          // threads waiting for work; guarded by mu_
  uint64_t taken_ = 0;                       // work taken by threads so far; guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;         // guarded by mu_
  std::thread grower_;                       // started with the first backlog; guarded by mu_
};

}  // namespace orb

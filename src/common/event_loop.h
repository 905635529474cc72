// A single-threaded event loop: the one thread on which a daemon's state machine runs.
//
// gRPC handlers and timers post closures here, so component logic needs no locks.
// Post() and RunAfter() are thread-safe; everything posted runs on the loop thread in
// order. The Asio io_context lives in the .cc so that headers stay light.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>

namespace orb {

class EventLoop {
 public:
  EventLoop();
  ~EventLoop();  // stops the loop and joins its thread
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Starts the loop on its own thread.
  void Start();
  // Runs the loop on the calling thread until Stop().
  void Run();
  // Stops the loop: nothing posted runs after the closure running now (which may still
  // be running when Stop returns).
  void Stop();
  // After Stop(): waits until the loop thread has finished that closure, so that what
  // closures use may be destroyed (found by tests/fuzz: the GCS's handler was destroyed
  // while its loop still ran a placement group callback). No-op on the loop thread.
  void Join();

  void Post(std::function<void()> fn);
  // Runs `fn` once after `delay` on the loop.
  void RunAfter(std::chrono::milliseconds delay, std::function<void()> fn);
  // Runs `fn` every `period` until it returns false or the loop stops.
  void RunEvery(std::chrono::milliseconds period, std::function<bool()> fn);

  bool IsLoopThread() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs `fn` on `loop` and waits up to `timeout` for its result (nullopt past it). For
// threads other than the loop's (an HTTP server's) that read the loop's state.
template <class Fn>
auto RunOnLoop(EventLoop* loop, Fn fn, std::chrono::milliseconds timeout) -> std::optional<decltype(fn())> {
  using Result = decltype(fn());
  // Shared: after a wait that timed out, the closure may still run.
  auto promise = std::make_shared<std::promise<Result>>();
  std::future<Result> result = promise->get_future();
  loop->Post([promise, fn = std::move(fn)]() mutable { promise->set_value(fn()); });
  if (result.wait_for(timeout) != std::future_status::ready) return std::nullopt;
  return result.get();
}

}  // namespace orb

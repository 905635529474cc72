#include "core/local_executor.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace orb {

struct LocalExecutor::State {
  int slots = 1;
  Growth growth = Growth::kNever;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;  // guarded by mu
  int threads = 0;                          // guarded by mu
  int idle = 0;                             // waiting for work; guarded by mu
  int running = 0;                          // running a function and not blocked; guarded by mu
  int busy = 0;                             // running a function, blocked or not; guarded by mu
  bool stopped = false;                     // guarded by mu
};

namespace {

thread_local std::shared_ptr<void> current_state;  // the executor this thread serves

}  // namespace

void LocalExecutor::StartThread(const std::shared_ptr<State>& state) {
  ++state->threads;
  std::thread([state] { Work(state); }).detach();
}

void LocalExecutor::Work(const std::shared_ptr<State>& state) {
  current_state = state;
  std::unique_lock<std::mutex> lock(state->mu);
  while (true) {
    ++state->idle;
    state->cv.wait(lock, [&] { return state->stopped || (!state->queue.empty() && state->running < state->slots); });
    --state->idle;
    if (state->stopped) break;
    auto fn = std::move(state->queue.front());
    state->queue.pop_front();
    ++state->running;
    ++state->busy;
    lock.unlock();
    fn();
    lock.lock();
    --state->running;
    --state->busy;
    state->cv.notify_all();
  }
  --state->threads;
  current_state.reset();
}

LocalExecutor::LocalExecutor(int slots, Growth growth) : state_(std::make_shared<State>()) {
  state_->slots = slots < 1 ? 1 : slots;
  state_->growth = growth;
}

LocalExecutor::~LocalExecutor() { Stop(); }

void LocalExecutor::Post(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->stopped) return;
  state_->queue.push_back(std::move(fn));
  // A thread is started when the work could run now and no waiting thread is left to
  // take it (a thread notified a moment ago still counts as waiting): at most one per
  // slot, more only while some are blocked.
  if (state_->queue.size() > static_cast<size_t>(state_->idle) && state_->running < state_->slots) {
    StartThread(state_);
  }
  state_->cv.notify_one();
}

void LocalExecutor::Stop() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->stopped = true;
  state_->queue.clear();
  state_->cv.notify_all();
}

bool LocalExecutor::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->cv.wait_for(lock, timeout, [&] { return state_->busy == 0; });
}

void LocalExecutor::Blocked() {
  auto state = std::static_pointer_cast<State>(current_state);
  if (!state || state->growth != Growth::kWhileBlocked) return;
  std::lock_guard<std::mutex> lock(state->mu);
  --state->running;
  if (state->queue.size() > static_cast<size_t>(state->idle)) StartThread(state);
  state->cv.notify_all();
}

void LocalExecutor::Unblocked() {
  auto state = std::static_pointer_cast<State>(current_state);
  if (!state || state->growth != Growth::kWhileBlocked) return;
  std::lock_guard<std::mutex> lock(state->mu);
  ++state->running;
}

}  // namespace orb

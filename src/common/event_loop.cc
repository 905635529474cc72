#include "common/event_loop.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <thread>

namespace orb {

struct EventLoop::Impl {
  boost::asio::io_context io{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{io.get_executor()};
  std::thread thread;
  std::thread::id loop_thread_id;
};

EventLoop::EventLoop() : impl_(std::make_unique<Impl>()) {}

EventLoop::~EventLoop() {
  Stop();
  Join();
}

void EventLoop::Start() {
  impl_->thread = std::thread([this] { Run(); });
}

void EventLoop::Run() {
  impl_->loop_thread_id = std::this_thread::get_id();
  impl_->io.run();
}

void EventLoop::Stop() {
  impl_->guard.reset();
  impl_->io.stop();
}

void EventLoop::Join() {
  if (impl_->thread.joinable() && std::this_thread::get_id() != impl_->thread.get_id()) impl_->thread.join();
}

void EventLoop::Post(std::function<void()> fn) { boost::asio::post(impl_->io, std::move(fn)); }

void EventLoop::RunAfter(std::chrono::milliseconds delay, std::function<void()> fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(impl_->io, delay);
  timer->async_wait([timer, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec) fn();
  });
}

void EventLoop::RunEvery(std::chrono::milliseconds period, std::function<bool()> fn) {
  RunAfter(period, [this, period, fn = std::move(fn)]() mutable {
    if (fn()) RunEvery(period, std::move(fn));
  });
}

bool EventLoop::IsLoopThread() const { return std::this_thread::get_id() == impl_->loop_thread_id; }

}  // namespace orb

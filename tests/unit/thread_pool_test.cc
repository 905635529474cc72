// ThreadPool's growth (a thread per backlog by default; with grow_every, only when its
// threads are blocked, and never while may_grow says no) and CallGate's limit.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/call_gate.h"
#include "common/thread_pool.h"
#include "wait_for.h"

using namespace orb;
using namespace std::chrono_literals;

namespace {

// Items that block until Open(); counts how many have started.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> started{0};
  void Block() {
    ++started;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return open; });
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu);
      open = true;
    }
    cv.notify_all();
  }
};


}  // namespace

TEST_CASE("a plain pool starts a thread for each item no free thread takes", "[thread_pool]") {
  Latch latch;
  ThreadPool pool(8);
  for (int i = 0; i < 4; ++i) pool.Post([&] { latch.Block(); });
  REQUIRE(orb::testing::WaitFor([&] { return latch.started == 4; }, 5000ms, 1ms));
  REQUIRE(pool.threads() == 4);
  latch.Open();
}

TEST_CASE("a growing pool adds threads while its threads are blocked", "[thread_pool]") {
  Latch latch;
  ThreadPool pool(8, 1000us);
  for (int i = 0; i < 4; ++i) pool.Post([&] { latch.Block(); });
  REQUIRE(orb::testing::WaitFor([&] { return latch.started == 4; }, 5000ms, 1ms));  // one thread per blocked millisecond
  REQUIRE(pool.threads() == 4);
  latch.Open();
}

TEST_CASE("a growing pool does not start a thread per item of a burst of quick work", "[thread_pool]") {
  std::atomic<int> done{0};
  ThreadPool pool(1000, 1000us);
  for (int i = 0; i < 2000; ++i) pool.Post([&] { ++done; });
  REQUIRE(orb::testing::WaitFor([&] { return done == 2000; }, 10000ms, 1ms));
  REQUIRE(pool.threads() < 50);  // a thread per item would be ~2000
}

TEST_CASE("a growing pool adds no thread while may_grow says no", "[thread_pool]") {
  Latch latch;
  std::atomic<bool> may{false};
  ThreadPool pool(8, 1000us, [&] { return may.load(); });
  for (int i = 0; i < 3; ++i) pool.Post([&] { latch.Block(); });
  REQUIRE(orb::testing::WaitFor([&] { return latch.started == 1; }, 5000ms, 1ms));
  std::this_thread::sleep_for(30ms);
  REQUIRE(latch.started == 1);
  REQUIRE(pool.threads() == 1);
  may = true;
  REQUIRE(orb::testing::WaitFor([&] { return latch.started == 3; }, 5000ms, 1ms));
  latch.Open();
}

TEST_CASE("a call gate admits up to its limit and one more as each leaves", "[call_gate]") {
  CallGate gate(2);
  gate.Enter();
  gate.Enter();
  REQUIRE_FALSE(gate.HasRoom());
  std::atomic<bool> third{false};
  std::thread waiter([&] {
    gate.Enter();
    third = true;
  });
  std::this_thread::sleep_for(30ms);
  REQUIRE_FALSE(third);
  gate.Leave();
  waiter.join();
  REQUIRE(third);
  gate.Leave();
  gate.Leave();
  REQUIRE(gate.HasRoom());
}

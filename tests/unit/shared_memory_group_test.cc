// The shared-memory transport of collectives, with members as threads of this process:
// results across several rounds, calls that disagree, a member that leaves, a member
// that never comes, and members that do not all want it. (Members that die are killed
// for real in collective_test.)
#include "collective/shared_memory_group.h"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <numeric>
#include <thread>

#include "orb/errors.h"

namespace col = orb::collective;
using col::SharedMemoryGroup;

namespace {

// An allgather among threads: what SharedMemoryGroup::Connect needs from a transport.
class ThreadExchange {
 public:
  explicit ThreadExchange(int size) : size_(size), slots_(static_cast<size_t>(size)) {}
  std::vector<int64_t> Run(int rank, const std::vector<int64_t>& mine) {
    std::unique_lock<std::mutex> lock(mu_);
    uint64_t generation = generation_;
    slots_[static_cast<size_t>(rank)] = mine;
    if (++arrived_ == size_) {
      all_.clear();
      for (auto& s : slots_) all_.insert(all_.end(), s.begin(), s.end());
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return generation_ != generation; });
    }
    return all_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  const int size_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<std::vector<int64_t>> slots_;
  std::vector<int64_t> all_;
};

using Groups = std::vector<std::unique_ptr<SharedMemoryGroup>>;

Groups Connect(int size, std::chrono::milliseconds timeout = std::chrono::seconds(20),
               std::function<bool(int)> wanted = [](int) { return true; }) {
  ThreadExchange exchange(size);
  Groups groups(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      groups[static_cast<size_t>(r)] = SharedMemoryGroup::Connect(
          "g", r, size, wanted(r), timeout, [&](const std::vector<int64_t>& mine) { return exchange.Run(r, mine); });
    });
  }
  for (auto& t : threads) t.join();
  return groups;
}

// Runs body(rank) on a thread per member; returns each member's error ("" if none).
std::vector<std::string> OnEach(int size, const std::function<void(int)>& body) {
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

col::Tensor View(std::vector<float>& v) { return col::View(v); }

}  // namespace

TEST_CASE("every collective gives the right values, also when a tensor takes several rounds", "[shm]") {
  constexpr int kSize = 3;
  auto groups = Connect(kSize);
  for (auto& g : groups) REQUIRE(g);
  // 0 elements, one, a small tensor, and 700k floats (2.8 MB: three rounds of 1 MiB).
  for (size_t count : {size_t{0}, size_t{1}, size_t{1000}, size_t{700000}}) {
    std::vector<std::vector<float>> sum(kSize), max(kSize), bcast(kSize), reduced(kSize);
    std::vector<std::vector<float>> gathered(kSize), scattered(kSize);
    auto errors = OnEach(kSize, [&](int r) {
      auto& g = *groups[static_cast<size_t>(r)];
      auto value = [&](size_t i) { return static_cast<float>((i % 1000) * (r + 1)); };
      std::vector<float>& s = sum[static_cast<size_t>(r)];
      for (size_t i = 0; i < count; ++i) s.push_back(value(i));
      g.AllReduce(View(s), col::ReduceOp::SUM);
      std::vector<float>& m = max[static_cast<size_t>(r)];
      for (size_t i = 0; i < count; ++i) m.push_back(value(i) * (r == 1 ? -1.0f : 1.0f));
      g.AllReduce(View(m), col::ReduceOp::MAX);
      std::vector<float>& b = bcast[static_cast<size_t>(r)];
      b.assign(count, static_cast<float>(r));
      g.Broadcast(View(b), 2);
      std::vector<float>& red = reduced[static_cast<size_t>(r)];
      for (size_t i = 0; i < count; ++i) red.push_back(value(i));
      g.Reduce(View(red), 1, col::ReduceOp::SUM);
      std::vector<float> mine(count, static_cast<float>(r));
      gathered[static_cast<size_t>(r)].resize(count * kSize);
      g.AllGather(View(mine), View(gathered[static_cast<size_t>(r)]));
      std::vector<float> in(count * kSize);
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 1000);
      scattered[static_cast<size_t>(r)].resize(count);
      g.ReduceScatter(View(in), View(scattered[static_cast<size_t>(r)]), col::ReduceOp::SUM);
      g.Barrier();
    });
    for (auto& e : errors) REQUIRE(e.empty());
    for (int r = 0; r < kSize; ++r) {
      INFO("count " << count << ", rank " << r);
      auto R = static_cast<size_t>(r);
      for (size_t i = 0; i < count; ++i) {
        float base = static_cast<float>(i % 1000);
        REQUIRE(sum[R][i] == base * 6);  // 1 + 2 + 3
        REQUIRE(max[R][i] == base * 3);
        REQUIRE(bcast[R][i] == 2);
        REQUIRE(reduced[R][i] == (r == 1 ? base * 6 : base * (r + 1)));  // only the root's changes
        for (int from = 0; from < kSize; ++from) REQUIRE(gathered[R][from * count + i] == from);
        REQUIRE(scattered[R][i] == static_cast<float>((R * count + i) % 1000) * kSize);
      }
    }
  }
}

TEST_CASE("calls that disagree fail on every member, and the group goes on", "[shm]") {
  auto groups = Connect(2);
  auto errors = OnEach(2, [&](int r) {
    std::vector<float> v(r == 0 ? 4 : 8, 1.0f);
    groups[static_cast<size_t>(r)]->AllReduce(View(v), col::ReduceOp::SUM);
  });
  for (auto& e : errors) CHECK_THAT(e, Catch::Contains("AllReduce on 4 float32") && Catch::Contains("AllReduce on 8 float32"));
  errors = OnEach(2, [&](int r) {
    std::vector<float> v(4, 1.0f);
    if (r == 0) groups[0]->Broadcast(View(v), 0);
    else groups[1]->Broadcast(View(v), 1);
  });
  for (auto& e : errors) CHECK_THAT(e, Catch::Contains("root 0") && Catch::Contains("root 1"));
  std::vector<std::vector<float>> out(2, std::vector<float>{1.0f});
  errors = OnEach(2, [&](int r) { groups[static_cast<size_t>(r)]->AllReduce(View(out[r]), col::ReduceOp::SUM); });
  CHECK(errors == std::vector<std::string>{"", ""});
  CHECK(out[0] == std::vector<float>{2.0f});
}

TEST_CASE("a member that leaves fails the others at once; one that never calls, after the timeout", "[shm]") {
  SECTION("leaves") {
    auto groups = Connect(3);
    auto start = std::chrono::steady_clock::now();
    auto errors = OnEach(3, [&](int r) {
      if (r == 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the others wait first
        groups[2].reset();
        return;
      }
      groups[static_cast<size_t>(r)]->Barrier();
    });
    CHECK_THAT(errors[0], Catch::Contains("Barrier on collective group 'g' failed: rank 2 left the group"));
    CHECK_THAT(errors[1], Catch::Contains("rank 2 left the group"));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));  // the timeout is 20 s
  }
  SECTION("never calls") {
    auto groups = Connect(2, std::chrono::milliseconds(300));
    std::vector<float> v{1.0f};
    CHECK_THROWS_WITH(groups[0]->AllReduce(View(v), col::ReduceOp::SUM),
                      Catch::Contains("rank 1 did not make the call within 300 ms"));
    CHECK_THROWS_WITH(groups[0]->AllReduce(View(v), col::ReduceOp::SUM),
                      Catch::Contains("failed earlier") && Catch::Contains("make it again"));
  }
}

TEST_CASE("unless every member wants shared memory, none uses it", "[shm]") {
  auto groups = Connect(3, std::chrono::seconds(20), [](int r) { return r != 1; });
  for (auto& g : groups) CHECK(g == nullptr);
  for (auto& g : Connect(2)) CHECK(g != nullptr);
}

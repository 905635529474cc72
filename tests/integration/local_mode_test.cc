// Config::local_mode: the whole API in this process, no daemons: tasks (nested ones on
// one CPU too), objects and refs inside values, actors with names, restarts, ExitActor
// and concurrency, placement groups, and the errors a program sees on a cluster.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "test_cluster.h"

namespace {

int Plus(int a, int b) { return a + b; }
int Throws(int) { throw std::logic_error("bad input"); }
int NestedSum(int n) {
  std::vector<orb::ObjectRef<int>> parts;
  for (int i = 1; i <= n; ++i) parts.push_back(orb::Task(Plus).Remote(i, 0));
  int total = 0;
  for (const auto& p : orb::Get(parts)) total += *p;
  return total;
}
int Pid() { return static_cast<int>(::getpid()); }
int SleepMs(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}
int Deref(orb::ObjectRef<orb::ObjectRef<int>> ref) { return *ref.Get()->Get(); }
ORB_REMOTE(Plus, Throws, NestedSum, Pid, SleepMs, Deref);

// Three calls that each wait until all three are running.
class Latch {
 public:
  static Latch* Create() { return new Latch(); }
  std::string CountDown() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--count_ == 0) cv_.notify_all();
    bool all = cv_.wait_for(lock, std::chrono::seconds(10), [this] { return count_ == 0; });
    return all ? "ok" : "alone";
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 3;
};
ORB_REMOTE(Latch::Create, &Latch::CountDown);

class Counter {
 public:
  explicit Counter(int start) : n_(start), restarted_(orb::WasCurrentActorRestarted()) {}
  static Counter* Create(int start) { return new Counter(start); }
  int Add(int x) { return n_ += x; }
  bool RestartedInConstructor() const { return restarted_; }
  std::string Where() const { return orb::GetRuntimeContext().GetActorId(); }
  int Leave() { orb::ExitActor(); }

 private:
  int n_;
  bool restarted_;
};
ORB_REMOTE(Counter::Create, &Counter::Add, &Counter::RestartedInConstructor, &Counter::Where, &Counter::Leave);

struct LocalMode {
  explicit LocalMode(double cpus = 2) {
    orb::Config config;
    config.local_mode = true;
    config.num_cpus = cpus;
    orb::Init(config);
  }
  ~LocalMode() { orb::Shutdown(); }
};

}  // namespace

TEST_CASE("local mode runs tasks in this process, nested ones on one CPU too", "[local_mode]") {
  LocalMode local(1);
  CHECK(orb::IsLocalMode());
  CHECK(*orb::Task(Pid).Remote().Get() == static_cast<int>(::getpid()));
  CHECK(*orb::Task(Plus).Remote(orb::Task(Plus).Remote(1, 2), 10).Get() == 13);
  CHECK(*orb::Task(NestedSum).Remote(20).Get(30000) == 210);  // blocks in Get on its own CPU
  CHECK(orb::Nodes().size() == 1);
  CHECK(orb::GetNamespace().size() == 36);
}

TEST_CASE("local mode gives the errors a cluster gives", "[local_mode][errors]") {
  LocalMode local;
  auto bad = orb::Task(Throws).Remote(1);
  CHECK_THROWS_AS(bad.Get(), orb::TaskError);
  CHECK_THROWS_WITH(bad.Get(), Catch::Contains("Throws") && Catch::Contains("std::logic_error: bad input"));
  CHECK_THROWS_AS(orb::Task(Plus).Remote(bad, 1).Get(), orb::TaskError);  // dependents fail with it
  CHECK_THROWS_AS(orb::Task(SleepMs).Remote(2000).Get(10), orb::GetTimeoutError);
  CHECK_THROWS_AS(orb::Task(Plus).SetResource("CPU", -1).Remote(1, 2), orb::Error);
}

TEST_CASE("local mode passes refs inside values", "[local_mode]") {
  LocalMode local;
  auto inner = orb::Put(7);
  auto outer = orb::Put(inner);
  CHECK(*orb::Task(Deref).Remote(outer).Get() == 7);
  auto waited = orb::Wait(std::vector<orb::ObjectRef<int>>{inner, orb::Task(SleepMs).Remote(5000)}, 1, 2000);
  CHECK(waited.ready.size() == 1);
}

TEST_CASE("local mode actors: order, names, restarts, ExitActor, concurrency", "[local_mode][actors]") {
  LocalMode local;
  auto counter = orb::Actor(Counter::Create).SetName("c").SetMaxRestarts(1).Remote(0);
  std::vector<orb::ObjectRef<int>> sums;
  for (int i = 1; i <= 50; ++i) sums.push_back(counter.Task(&Counter::Add).Remote(i));
  CHECK(*orb::Get(sums).back() == 1275);
  CHECK(*counter.Task(&Counter::Where).Remote().Get() == counter.ID());
  REQUIRE(orb::GetActor<Counter>("c"));
  CHECK_THROWS_AS(orb::Actor(Counter::Create).SetName("c").Remote(0), orb::Error);
  CHECK_FALSE(*counter.Task(&Counter::RestartedInConstructor).Remote().Get());
  counter.Kill(/*no_restart=*/false);
  CHECK(*counter.Task(&Counter::RestartedInConstructor).Remote().Get());
  CHECK(*counter.Task(&Counter::Add).Remote(1).Get() == 1);  // constructor ran again
  CHECK_THROWS_AS(counter.Task(&Counter::Leave).Remote().Get(), orb::ActorDiedError);
  CHECK_THROWS_AS(counter.Task(&Counter::Add).Remote(1).Get(), orb::ActorDiedError);
  CHECK_FALSE(orb::GetActor<Counter>("c"));
  auto latch = orb::Actor(Latch::Create).SetMaxConcurrency(3).Remote();
  std::vector<orb::ObjectRef<std::string>> all;
  for (int i = 0; i < 3; ++i) all.push_back(latch.Task(&Latch::CountDown).Remote());
  for (const auto& r : orb::Get(all, 30000)) CHECK(*r == "ok");
  // A concurrency group runs its calls at once while the default group runs one at a time.
  auto grouped = orb::Actor(Latch::Create).AddConcurrencyGroup("io", 3).Remote();
  all.clear();
  for (int i = 0; i < 3; ++i) all.push_back(grouped.Task(&Latch::CountDown).SetConcurrencyGroup("io").Remote());
  for (const auto& r : orb::Get(all, 30000)) CHECK(*r == "ok");
  CHECK_THROWS_WITH(grouped.Task(&Latch::CountDown).SetConcurrencyGroup("gpu").Remote().Get(),
                    Catch::Contains("no concurrency group 'gpu'"));
}

TEST_CASE("local mode placement groups are placed at once", "[local_mode][pg]") {
  LocalMode local;
  auto pg = orb::CreatePlacementGroup({"g", {{{"CPU", 1}}, {{"CPU", 1}}}, orb::PlacementStrategy::STRICT_SPREAD});
  CHECK(pg.Wait(1));
  CHECK(orb::GetPlacementGroup("g").GetID() == pg.GetID());
  CHECK(*orb::Task(Plus).SetPlacementGroup(pg, 1).Remote(2, 3).Get() == 5);
  orb::RemovePlacementGroup(pg.GetID());
  CHECK(pg.GetState() == orb::PlacementGroupState::REMOVED);
}

TEST_CASE("Shutdown in local mode returns while a task still runs", "[local_mode]") {
  {
    LocalMode local;
    orb::Task(SleepMs).Remote(4000);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK_FALSE(orb::IsInitialized());
}

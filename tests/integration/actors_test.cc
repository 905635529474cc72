// Actors end to end on the embedded cluster: ordered calls, names, Kill, crashes with
// and without restarts, retried calls, many actors, handles passed around, concurrency,
// ExitActor, and the errors a user would see.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <unordered_map>

#include "test_cluster.h"

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Counter {
 public:
  explicit Counter(int start) : n_(start), restarted_at_construction_(orb::GetRuntimeContext().WasCurrentActorRestarted()) {}
  static Counter* Create(int start) { return new Counter(start); }
  static Counter* CreateChecked(int start) {
    if (start < 0) throw std::runtime_error("start must not be negative, got " + std::to_string(start));
    return new Counter(start);
  }
  int Add(int x) { return n_ += x; }
  int Get() const { return n_; }
  int Pid() const { return static_cast<int>(::getpid()); }
  bool Restarted() const { return orb::GetRuntimeContext().WasCurrentActorRestarted(); }
  // What WasCurrentActorRestarted() said inside the constructor (where programs restore
  // their state from a checkpoint).
  bool RestartedAtConstruction() const { return restarted_at_construction_; }
  std::string ActorId() const { return orb::GetRuntimeContext().GetActorId(); }
  int Crash() { std::_Exit(3); }
  // Kills the process the first time (a marker file remembers), returns x after.
  int CrashOnce(std::string marker, int x) {
    if (!std::filesystem::exists(marker)) {
      std::ofstream(marker) << "crashed";
      std::_Exit(3);
    }
    return x;
  }
  std::vector<int64_t> Stamp(int ms) {
    int64_t start = NowMs();
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return {start, NowMs()};
  }
  int Leave() { orb::ExitActor(); }
  int Fail() { throw std::logic_error("no value today"); }
  std::string Env(std::string name) const {
    const char* v = std::getenv(name.c_str());
    return v ? v : "";
  }
  int NotRegistered() { return 0; }

 private:
  int n_;
  bool restarted_at_construction_;
};
ORB_REMOTE(Counter::Create, Counter::CreateChecked, &Counter::Add, &Counter::Get, &Counter::Pid, &Counter::Restarted,
           &Counter::RestartedAtConstruction, &Counter::Fail, &Counter::Env,
           &Counter::ActorId, &Counter::Crash, &Counter::CrashOnce, &Counter::Stamp, &Counter::Leave);

// A task that calls an actor through a handle it received as an argument.
int AddThroughHandle(orb::ActorHandle<Counter> counter, int x) { return *counter.Task(&Counter::Add).Remote(x).Get(); }
ORB_REMOTE(AddThroughHandle);

// Kills the actor's process; what its later calls say once the death is known.
std::string KillAndWaitForDeath(orb::ActorHandle<Counter>& counter) {
  int pid = *counter.Task(&Counter::Pid).Remote().Get(30000);
  REQUIRE(::kill(pid, SIGKILL) == 0);
  std::string last;
  orb::testing::WaitFor(
      [&] {
        try {
          counter.Task(&Counter::Get).Remote().Get(30000);
        } catch (const orb::ActorDiedError& e) {
          last = e.what();
        }
        return last.find("SIGKILL") != std::string::npos;
      },
      std::chrono::seconds(15));
  return last;
}

std::string TempMarker(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("orb-actors-test-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

}  // namespace

TEST_CASE("100 calls run in the order they were made, and the state persists", "[actors]") {
  orb::testing::EnsureCluster();
  auto counter = orb::Actor(Counter::Create).Remote(0);
  std::vector<orb::ObjectRef<int>> sums;
  for (int i = 1; i <= 100; ++i) sums.push_back(counter.Task(&Counter::Add).Remote(i));
  auto values = orb::Get(sums);
  for (int i = 1; i <= 100; ++i) CHECK(*values[i - 1] == i * (i + 1) / 2);
  CHECK(*counter.Task(&Counter::Get).Remote().Get() == 5050);
  CHECK(counter.Task(&Counter::ActorId).Remote().Get()->size() == 32);
  CHECK(*counter.Task(&Counter::ActorId).Remote().Get() == counter.ID());
}

TEST_CASE("a named actor is found by name; names are unique while the actor lives", "[actors]") {
  orb::testing::EnsureCluster();
  auto created = orb::Actor(Counter::Create).SetName("the-counter").Remote(7);
  auto found = orb::GetActor<Counter>("the-counter");
  REQUIRE(found.has_value());
  CHECK(*found->Task(&Counter::Add).Remote(1).Get() == 8);
  CHECK(*created.Task(&Counter::Get).Remote().Get() == 8);
  CHECK_FALSE(orb::GetActor<Counter>("no-such-counter").has_value());
  CHECK_FALSE(orb::GetActor<Counter>("the-counter", "another-namespace").has_value());
  CHECK_THROWS_WITH(orb::Actor(Counter::Create).SetName("the-counter").Remote(0), Catch::Contains("already exists"));
  created.Kill();
  // Dead actors give their names back.
  CHECK(orb::testing::WaitFor([] { return !orb::GetActor<Counter>("the-counter").has_value(); },
                              std::chrono::seconds(10)));
  auto again = orb::Actor(Counter::Create).SetName("the-counter").Remote(1);
  CHECK(*again.Task(&Counter::Get).Remote().Get() == 1);
}

TEST_CASE("Kill ends an actor: later calls throw ActorDiedError", "[actors]") {
  orb::testing::EnsureCluster();
  auto counter = orb::Actor(Counter::Create).Remote(1);
  CHECK(*counter.Task(&Counter::Add).Remote(1).Get() == 2);
  counter.Kill();
  CHECK_THROWS_AS(counter.Task(&Counter::Get).Remote().Get(30000), orb::ActorDiedError);
  CHECK_THROWS_WITH(counter.Task(&Counter::Get).Remote().Get(30000), Catch::Contains("Kill"));
}

TEST_CASE("a crash without restarts makes that call and every later one ActorDiedError", "[actors][faults]") {
  orb::testing::EnsureCluster();
  auto counter = orb::Actor(Counter::Create).Remote(1);
  REQUIRE(*counter.Task(&Counter::Add).Remote(1).Get() == 2);
  CHECK_THROWS_AS(counter.Task(&Counter::Crash).Remote().Get(30000), orb::ActorDiedError);
  CHECK_THROWS_AS(counter.Task(&Counter::Get).Remote().Get(30000), orb::ActorDiedError);
}

TEST_CASE("an actor whose process is killed says how it died", "[actors][faults][regression]") {
  orb::testing::EnsureCluster();
  auto counter = orb::Actor(Counter::Create).Remote(1);
  CHECK_THAT(KillAndWaitForDeath(counter), Catch::Contains("its worker process died (killed by signal 9 (SIGKILL))"));
}

TEST_CASE("actors after the first come forked from the job's fork server, and their deaths are seen as any worker's",
          "[actors][faults]") {
  orb::testing::EnsureCluster();
  std::vector<orb::ActorHandle<Counter>> counters;
  for (int i = 0; i < 6; ++i) counters.push_back(orb::Actor(Counter::Create).Remote(i));
  std::vector<orb::ObjectRef<std::string>> started;
  for (auto& c : counters) started.push_back(c.Task(&Counter::Env).Remote(std::string("ORB_WORKER_STARTED_BY")));
  int forked = -1;
  auto how = orb::Get(started, 60000);
  for (int i = 0; i < 6; ++i) {
    if (*how[i] == "fork_server") forked = i;
  }
  REQUIRE(forked >= 0);  // the fork server is up by the time a few workers have started
  // Its pid is the raylet's to reap: a kill is reported as for any worker.
  auto& counter = counters[forked];
  CHECK(*counter.Task(&Counter::Add).Remote(10).Get(30000) == forked + 10);
  CHECK_THAT(KillAndWaitForDeath(counter), Catch::Contains("its worker process died (killed by signal 9 (SIGKILL))"));
  for (auto& c : counters) c.Kill();
}

TEST_CASE("a crash with restarts left continues in a new process with the constructor rerun", "[actors][faults]") {
  orb::testing::EnsureCluster();
  auto counter = orb::Actor(Counter::Create).SetMaxRestarts(1).Remote(10);
  int first_pid = *counter.Task(&Counter::Pid).Remote().Get();
  CHECK_FALSE(*counter.Task(&Counter::Restarted).Remote().Get());
  CHECK_FALSE(*counter.Task(&Counter::RestartedAtConstruction).Remote().Get());
  CHECK(*counter.Task(&Counter::Add).Remote(5).Get() == 15);
  // The call that crashed is not retried (no task retries): it fails...
  CHECK_THROWS_AS(counter.Task(&Counter::Crash).Remote().Get(30000), orb::ActorDiedError);
  // ...and the next call reaches the restarted actor, whose constructor ran again.
  CHECK(*counter.Task(&Counter::Add).Remote(1).Get(30000) == 11);
  CHECK(*counter.Task(&Counter::Restarted).Remote().Get());
  CHECK(*counter.Task(&Counter::RestartedAtConstruction).Remote().Get());  // the failover path runs
  CHECK(*counter.Task(&Counter::Pid).Remote().Get() != first_pid);
  // No restarts left: the next crash is final.
  CHECK_THROWS_AS(counter.Task(&Counter::Crash).Remote().Get(30000), orb::ActorDiedError);
  CHECK_THROWS_AS(counter.Task(&Counter::Get).Remote().Get(30000), orb::ActorDiedError);
}

TEST_CASE("with task retries, the call in flight when the actor died runs again after the restart", "[actors][faults]") {
  orb::testing::EnsureCluster();
  std::string marker = TempMarker("crash-once");
  std::filesystem::remove(marker);
  auto counter = orb::Actor(Counter::Create).SetMaxRestarts(1).SetMaxTaskRetries(1).Remote(0);
  auto crashing = counter.Task(&Counter::CrashOnce).Remote(marker, 42);
  auto after = counter.Task(&Counter::Add).Remote(3);
  CHECK(*crashing.Get(30000) == 42);
  CHECK(*after.Get(30000) == 3);  // delivered after it, to the new process
  CHECK(*counter.Task(&Counter::Restarted).Remote().Get());
  std::filesystem::remove(marker);
}

TEST_CASE("eight small actors at once, each in its own process", "[actors]") {
  orb::testing::EnsureCluster();
  std::vector<orb::ActorHandle<Counter>> counters;
  for (int i = 0; i < 8; ++i) counters.push_back(orb::Actor(Counter::Create).Remote(i * 100));
  std::vector<orb::ObjectRef<int>> added, pids;
  for (auto& c : counters) added.push_back(c.Task(&Counter::Add).Remote(1));
  for (auto& c : counters) pids.push_back(c.Task(&Counter::Pid).Remote());
  auto values = orb::Get(added, 60000);
  for (int i = 0; i < 8; ++i) CHECK(*values[i] == i * 100 + 1);
  std::set<int> distinct;
  for (const auto& p : orb::Get(pids)) distinct.insert(*p);
  CHECK(distinct.size() == 8);
  for (auto& c : counters) c.Kill();
}

TEST_CASE("handles pass into tasks, which call the same actor", "[actors]") {
  orb::testing::EnsureCluster();
  auto counter = orb::Actor(Counter::Create).Remote(100);
  CHECK(*orb::Task(AddThroughHandle).Remote(counter, 5).Get(30000) == 105);
  CHECK(*orb::Task(AddThroughHandle).Remote(counter, 6).Get(30000) == 111);
  CHECK(*counter.Task(&Counter::Get).Remote().Get() == 111);
}

TEST_CASE("max_concurrency runs calls at the same time", "[actors]") {
  orb::testing::EnsureCluster();
  auto counter = orb::Actor(Counter::Create).SetMaxConcurrency(4).Remote(0);
  std::vector<orb::ObjectRef<std::vector<int64_t>>> stamps;
  for (int i = 0; i < 4; ++i) stamps.push_back(counter.Task(&Counter::Stamp).Remote(500));
  int64_t latest_start = 0, earliest_end = INT64_MAX;
  for (const auto& s : orb::Get(stamps, 30000)) {
    latest_start = std::max(latest_start, (*s)[0]);
    earliest_end = std::min(earliest_end, (*s)[1]);
  }
  CHECK(latest_start < earliest_end);  // all four were running at one moment
}

TEST_CASE("concurrency groups run their calls apart from the default group and from each other", "[actors]") {
  orb::testing::EnsureCluster();
  auto counter = orb::Actor(Counter::Create).AddConcurrencyGroup("io", 2).Remote(0);
  auto slow = counter.Task(&Counter::Stamp).Remote(1500);  // the default group: one at a time
  auto io1 = counter.Task(&Counter::Stamp).SetConcurrencyGroup("io").Remote(400);
  auto io2 = counter.Task(&Counter::Stamp).SetConcurrencyGroup("io").Remote(400);
  auto after = counter.Task(&Counter::Stamp).Remote(0);  // behind `slow`, in order
  auto s = *slow.Get(30000), a = *io1.Get(30000), b = *io2.Get(30000), later = *after.Get(30000);
  CHECK(a[1] < s[1]);                              // io ran while the default group's call did
  CHECK(std::max(a[0], b[0]) < std::min(a[1], b[1]));  // the two io calls at once
  CHECK(later[0] >= s[1]);                         // the default group keeps its order
  CHECK_THROWS_WITH(counter.Task(&Counter::Get).SetConcurrencyGroup("gpu").Remote().Get(30000),
                    Catch::Contains("no concurrency group 'gpu'") && Catch::Contains("io"));
  CHECK(*counter.Task(&Counter::Add).Remote(1).Get(30000) == 1);  // still serving
  CHECK_THROWS_WITH(orb::Actor(Counter::Create).AddConcurrencyGroup("io", 0).Remote(0), Catch::Contains("'io'"));
}

TEST_CASE("ExitActor ends the actor after the call", "[actors]") {
  orb::testing::EnsureCluster();
  auto counter = orb::Actor(Counter::Create).SetMaxRestarts(3).Remote(0);
  CHECK_THROWS_WITH(counter.Task(&Counter::Leave).Remote().Get(30000), Catch::Contains("ExitActor"));
  CHECK_THROWS_AS(counter.Task(&Counter::Get).Remote().Get(30000), orb::ActorDiedError);
}

TEST_CASE("bad input: a throwing constructor, an unregistered method, a handle to no actor", "[actors][errors]") {
  orb::testing::EnsureCluster();
  auto broken = orb::Actor(Counter::CreateChecked).Remote(-1);
  CHECK_THROWS_AS(broken.Task(&Counter::Get).Remote().Get(30000), orb::ActorDiedError);  // as in Ray
  CHECK_THROWS_WITH(broken.Task(&Counter::Get).Remote().Get(30000), Catch::Contains("start must not be negative"));
  auto counter = orb::Actor(Counter::Create).Remote(0);
  CHECK_THROWS_WITH(counter.Task(&Counter::NotRegistered), Catch::Contains("not registered"));
  orb::ActorHandle<Counter> stranger(std::string(16, 'x'));
  CHECK_THROWS_AS(stranger.Task(&Counter::Get).Remote().Get(30000), orb::ActorDiedError);
  CHECK_THROWS_AS(orb::Actor(Counter::Create).SetMaxConcurrency(0).Remote(0), orb::Error);
  CHECK_THROWS_AS(orb::Actor(Counter::Create).SetResource("CPU", -1).Remote(0), orb::Error);
}

TEST_CASE("a call whose argument is an earlier call's result on the same actor completes", "[actors][regression]") {
  orb::testing::EnsureCluster();
  auto counter = orb::Actor(Counter::Create).Remote(0);
  // Queued together: the later calls wait for results that only this batch makes.
  auto r1 = counter.Task(&Counter::Add).Remote(1);
  auto r2 = counter.Task(&Counter::Add).Remote(r1);
  auto r3 = counter.Task(&Counter::Add).Remote(r2);
  CHECK(*r3.Get(30000) == 4);  // 1, then 1 + 1, then 2 + 2
  CHECK(*r1.Get() == 1);
  CHECK(*r2.Get() == 2);
  // The same on an actor that runs calls on a pool.
  auto pooled = orb::Actor(Counter::Create).SetMaxConcurrency(3).Remote(10);
  auto p1 = pooled.Task(&Counter::Get).Remote();
  auto p2 = pooled.Task(&Counter::Add).Remote(p1);
  CHECK(*p2.Get(30000) == 20);
  // A failed call's error reaches the call that takes its result.
  auto failed = counter.Task(&Counter::Fail).Remote();
  auto after = counter.Task(&Counter::Add).Remote(failed);
  CHECK_THROWS_WITH(after.Get(30000), Catch::Contains("no value today"));
  CHECK_THROWS_WITH(failed.Get(), Catch::Contains("std::logic_error: no value today"));
}

TEST_CASE("actor calls take a name and resources as in Ray; ExitActor outside an actor is an error", "[actors][api]") {
  orb::testing::EnsureCluster();
  auto counter = orb::Actor(Counter::Create).SetResources(std::unordered_map<std::string, double>{{"CPU", 0.5}}).Remote(1);
  CHECK(*counter.Task(&Counter::Add).SetName("add_one").SetResources({{"CPU", 1.0}}).Remote(1).Get(30000) == 2);
  CHECK_THROWS_AS(counter.Task(&Counter::Add).SetResource("CPU", -1).Remote(1), orb::Error);
  CHECK(!orb::WasCurrentActorRestarted());
  CHECK_THROWS_WITH(orb::ExitActor(), Catch::Contains("outside an actor"));
}

TEST_CASE("an actor runs in its runtime environment; a bad one fails its calls with RuntimeEnvError", "[actors][runtime_env]") {
  orb::testing::EnsureCluster();
  orb::RuntimeEnv env;
  env.Set("env_vars", std::map<std::string, std::string>{{"ORB_ACTOR_KEY", "value2"}});
  auto counter = orb::Actor(Counter::Create).SetRuntimeEnv(env).Remote(0);
  CHECK(*counter.Task(&Counter::Env).Remote("ORB_ACTOR_KEY").Get(30000) == "value2");
  auto plain = orb::Actor(Counter::Create).Remote(0);
  CHECK(*plain.Task(&Counter::Env).Remote("ORB_ACTOR_KEY").Get(30000) == "");
  orb::RuntimeEnv nowhere;
  nowhere.Set("working_dir", std::string("/no/such/dir/anywhere"));
  auto lost = orb::Actor(Counter::Create).SetRuntimeEnv(nowhere).Remote(0);
  CHECK_THROWS_WITH(lost.Task(&Counter::Get).Remote().Get(30000), Catch::Contains("/no/such/dir/anywhere"));
}

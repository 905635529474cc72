// The task and object API end to end, on an embedded cluster of real processes.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "orb/state.h"
#include "test_cluster.h"

namespace {

int Plus(int a, int b) { return a + b; }
std::string Concat(std::string a, std::string b) { return a + b; }
std::vector<int64_t> Range(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}
int64_t SumVector(std::vector<int64_t> v) {
  int64_t s = 0;
  for (auto x : v) s += x;
  return s;
}
int Throws(int x) { throw std::runtime_error("bad input " + std::to_string(x)); }
int SleepMs(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}
// Sums 1..n by submitting one task per term and waiting for all of them: a task that
// blocks in Get on its own children.
int NestedSum(int n) {
  std::vector<orb::ObjectRef<int>> parts;
  for (int i = 1; i <= n; ++i) parts.push_back(orb::Task(Plus).Remote(i, 0));
  int total = 0;
  for (const auto& p : orb::Get(parts)) total += *p;
  return total;
}
// Dies on its first attempt (a marker file remembers), succeeds on the next.
int DieOnce(std::string marker) {
  if (!std::filesystem::exists(marker)) {
    std::ofstream(marker) << "attempted";
    ::kill(::getpid(), SIGKILL);
  }
  return 7;
}
// Throws on its first `failures` attempts (counted in a marker file), then returns them.
int FlakyThrows(std::string marker, int failures) {
  int seen = 0;
  std::ifstream(marker) >> seen;
  if (seen < failures) {
    std::ofstream(marker) << seen + 1;
    throw std::runtime_error("flaky attempt " + std::to_string(seen + 1));
  }
  return seen;
}
int AlwaysDie(int) {
  ::kill(::getpid(), SIGKILL);
  return 0;
}
std::string WhereAmI(int) {
  return orb::GetRuntimeContext().GetNodeId() + "/" + orb::GetRuntimeContext().GetTaskId();
}
// The first run writes its pid to `marker` and then hangs; a later run returns 11.
int HangOnce(std::string marker) {
  if (!std::filesystem::exists(marker)) {
    std::ofstream(marker + ".tmp") << ::getpid();
    std::filesystem::rename(marker + ".tmp", marker);
    std::this_thread::sleep_for(std::chrono::minutes(10));
  }
  return 11;
}

int Pid(int) { return static_cast<int>(::getpid()); }
// A task made by a task: owned by the worker that ran MakesChild.
orb::ObjectRef<int> MakesChild(int ms) { return orb::Task(SleepMs).Remote(ms); }

ORB_REMOTE(Plus, Concat, Range, SumVector, Throws, SleepMs, NestedSum, DieOnce, AlwaysDie, WhereAmI, HangOnce,
           FlakyThrows, Pid, MakesChild);

// Overloads with more parameters beside the one a program names (Ray's RAY_FUNC picks by
// parameter types).
int Overloaded() { return 0; }
int Overloaded(int x) { return x; }
int Overloaded(int x, int y) { return x * y; }
ORB_REMOTE(ORB_FUNC(Overloaded), ORB_FUNC(Overloaded, int), ORB_FUNC(Overloaded, int, int));

// A task that returns nothing: it leaves a file behind, or throws.
void Touch(std::string path) {
  if (path.empty()) throw std::invalid_argument("no path given");
  std::ofstream(path) << "touched";
}
ORB_REMOTE(Touch);

// Logs a line with ORBLOG; returns where the worker's log is (its session's logs/).
std::string LogSomething(std::string text) {
  ORBLOG(INFO) << "user says " << text;
  ORBLOG(DEBUG) << "below the default threshold: " << text;
  const char* session = std::getenv("ORB_SESSION_DIR");
  return std::string(session ? session : "") + "|" + orb::GetRuntimeContext().GetTaskId();
}
ORB_REMOTE(LogSomething);

std::string GetEnvVar(std::string name) {
  const char* value = std::getenv(name.c_str());
  return value ? value : "";
}
std::string CurrentDir() { return std::filesystem::current_path().string(); }
ORB_REMOTE(GetEnvVar, CurrentDir);

// Sleeps 20 ms and returns i, or kills its worker with abort() when `poison`.
int Work20ms(int i, bool poison) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (poison) std::abort();
  return i;
}
ORB_REMOTE(Work20ms);

orb::Config TestConfig() {
  orb::Config config;
  config.num_cpus = 2;
  config.num_gpus = 2;  // accounted, not used: tasks see them in CUDA_VISIBLE_DEVICES
  config.object_store_memory = 64ll << 20;
  config.infeasible_grace_ms = 300;
  return config;
}

// The GPUs a task was given, after a pause so that two such tasks overlap.
std::string VisibleGpus(int pause_ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? v : "<unset>";
}
ORB_REMOTE(VisibleGpus);

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))).string();
}

}  // namespace

namespace {
std::set<std::string> WorkerIds() {
  std::set<std::string> ids;
  for (const auto& row : orb::state::List("workers")) {
    if (row.at("is_driver") != "true") ids.insert(row.at("worker_id"));
  }
  return ids;
}
}  // namespace

// First in the file, on a cluster that has started no worker yet.
TEST_CASE("a task fanning out 50 quick nested tasks starts no more workers than the CPUs", "[tasks]") {
  orb::testing::EnsureCluster(TestConfig());
  std::set<std::string> before = WorkerIds();
  CHECK(*orb::Task(NestedSum).Remote(50).Get(60000) == 50 * 51 / 2);
  size_t started = 0;
  for (const auto& id : WorkerIds()) started += before.count(id) == 0;
  // The parent's worker, and one per CPU (the parent lends its CPU while it waits).
  CHECK(started <= TestConfig().num_cpus + 1);
  CHECK(started >= 2);
}

TEST_CASE("memory_growth is checked where the task is submitted", "[tasks]") {
  orb::testing::EnsureCluster(TestConfig());
  CHECK_THROWS_WITH(orb::Task(Plus).SetResource("memory", 1 << 20).SetMemoryGrowth(0.5).Remote(1, 2),
                    Catch::Contains("memory_growth must be more than 1"));
  CHECK_THROWS_WITH(orb::Task(Plus).SetMemoryGrowth(2).Remote(1, 2), Catch::Contains("needs a memory request"));
  CHECK(*orb::Task(Plus).SetResource("memory", 1 << 20).SetMemoryGrowth(2, 4 << 20).Remote(1, 2).Get(60000) == 3);
}

TEST_CASE("a task returns its value through Get", "[tasks]") {
  orb::testing::EnsureCluster(TestConfig());
  auto r = orb::Task(Plus).Remote(1, 2);
  CHECK(*orb::Get(r) == 3);
  CHECK(*r.Get() == 3);
  CHECK(r.ID().size() == 40);
  CHECK(*orb::Task(Concat).Remote(std::string("ab"), std::string("cd")).Get() == "abcd");
}

TEST_CASE("ObjectRef arguments arrive as values, and chains of tasks compose", "[tasks]") {
  orb::testing::EnsureCluster(TestConfig());
  auto a = orb::Task(Plus).Remote(1, 2);
  auto b = orb::Task(Plus).Remote(a, 10);
  auto c = orb::Task(Plus).Remote(a, b);
  CHECK(*orb::Get(c) == 16);
  auto put = orb::Put(100);
  CHECK(*orb::Task(Plus).Remote(put, put).Get() == 200);
}

TEST_CASE("many tasks run and every result is right", "[tasks]") {
  orb::testing::EnsureCluster(TestConfig());
  std::vector<orb::ObjectRef<int>> refs;
  for (int i = 0; i < 500; ++i) refs.push_back(orb::Task(Plus).Remote(i, i));
  auto values = orb::Get(refs);
  REQUIRE(values.size() == 500);
  for (int i = 0; i < 500; ++i) CHECK(*values[i] == 2 * i);
}

TEST_CASE("large values go through the shared-memory store, both ways", "[objects]") {
  orb::testing::EnsureCluster(TestConfig());
  std::vector<int64_t> big(1 << 20);  // 8 MiB of payload
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<int64_t>(i);
  auto ref = orb::Put(big);
  CHECK(*orb::Get(ref) == big);
  int64_t n = 1 << 20;
  CHECK(*orb::Task(SumVector).Remote(ref).Get() == n * (n - 1) / 2);
  auto produced = orb::Task(Range).Remote(n);  // a large return value
  CHECK(orb::Get(produced)->size() == static_cast<size_t>(n));
  CHECK(*orb::Task(SumVector).Remote(produced).Get() == n * (n - 1) / 2);
}

TEST_CASE("dropping refs frees store memory for new objects", "[objects]") {
  orb::testing::EnsureCluster(TestConfig());
  // 20 objects of 16 MiB through a 64 MiB store: only works if freed ones are reused.
  for (int i = 0; i < 20; ++i) {
    auto ref = orb::Put(std::vector<int64_t>(2 << 20, i));
    CHECK(orb::Get(ref)->at(5) == i);
  }
}

TEST_CASE("an object larger than the store is ObjectStoreFullError", "[objects][errors]") {
  orb::testing::EnsureCluster(TestConfig());
  CHECK_THROWS_AS(orb::Put(std::vector<double>(10 << 20, 1.5)), orb::ObjectStoreFullError);  // 90 MiB
  // The store still works afterwards.
  CHECK(orb::Get(orb::Put(std::vector<int64_t>(1 << 20, 2)))->at(0) == 2);
}

TEST_CASE("a task that throws gives TaskError with the function and message; dependents fail too", "[errors]") {
  orb::testing::EnsureCluster(TestConfig());
  auto bad = orb::Task(Throws).Remote(5);
  try {
    orb::Get(bad);
    FAIL("expected TaskError");
  } catch (const orb::TaskError& e) {
    CHECK_THAT(e.what(), Catch::Contains("Throws") && Catch::Contains("std::runtime_error: bad input 5"));
  }
  auto dependent = orb::Task(Plus).Remote(bad, 1);
  CHECK_THROWS_AS(orb::Get(dependent), orb::TaskError);
  CHECK(*orb::Task(Plus).Remote(2, 2).Get() == 4);  // the worker keeps serving
}

TEST_CASE("SetRetryExceptions reruns a task that throws, within max_retries", "[errors]") {
  orb::testing::EnsureCluster(TestConfig());
  std::string dir = std::filesystem::temp_directory_path() / ("orb-flaky-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  CHECK(*orb::Task(FlakyThrows).SetRetryExceptions().SetMaxRetries(2).Remote(dir + "/a", 2).Get(30000) == 2);
  CHECK_THROWS_WITH(orb::Task(FlakyThrows).SetRetryExceptions().SetMaxRetries(1).Remote(dir + "/b", 5).Get(30000),
                    Catch::Contains("flaky attempt 2"));  // the last attempt's error
  CHECK_THROWS_WITH(orb::Task(FlakyThrows).Remote(dir + "/c", 1).Get(30000), Catch::Contains("flaky attempt 1"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("SetMaxCalls: a worker ends after its calls, once nothing it owns is needed", "[tasks]") {
  orb::testing::EnsureCluster(TestConfig());
  std::vector<orb::ObjectRef<int>> refs;
  for (int i = 0; i < 4; ++i) refs.push_back(orb::Task(Pid).SetMaxCalls(1).Remote(i));
  std::set<int> pids;
  for (auto& ref : refs) pids.insert(*ref.Get(60000));
  CHECK(pids.size() == 4);  // each call in a fresh process
  auto gone = [](int pid) {
    for (int i = 0; i < 200 && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return ::kill(pid, 0) != 0;
  };
  for (int pid : pids) CHECK(gone(pid));
  std::map<int, int> calls_by_pid;
  for (int i = 0; i < 4; ++i) calls_by_pid[*orb::Task(Pid).SetMaxCalls(2).Remote(i).Get(60000)]++;
  CHECK(calls_by_pid.size() >= 2);
  for (const auto& [pid, calls] : calls_by_pid) CHECK(calls <= 2);  // no process ran a third
  // The worker that made a child task's result waits while the caller still needs it.
  auto inner = orb::Task(MakesChild).SetMaxCalls(1).Remote(1500).Get(60000);
  CHECK(*inner->Get(60000) == 1500);
  CHECK_THROWS_WITH(orb::Task(Pid).SetMaxCalls(-1).Remote(0), Catch::Contains("max_calls must be >= 0"));
}

TEST_CASE("Get with a timeout throws GetTimeoutError; Wait splits ready from unready", "[objects]") {
  orb::testing::EnsureCluster(TestConfig());
  auto slow = orb::Task(SleepMs).Remote(1500);
  CHECK_THROWS_AS(orb::Get(slow, 100), orb::GetTimeoutError);
  auto fast = orb::Task(SleepMs).Remote(0);
  orb::Get(fast);
  auto result = orb::Wait(std::vector<orb::ObjectRef<int>>{slow, fast}, 1, 5000);
  CHECK(result.ready.size() == 1);
  CHECK(result.unready.size() == 1);
  CHECK(result.ready[0].ID() == fast.ID());
  CHECK(*orb::Get(slow) == 1500);
}

TEST_CASE("tasks that wait on their own child tasks do not deadlock", "[tasks]") {
  orb::testing::EnsureCluster(TestConfig());
  // Two CPUs, three parents each holding one while waiting: blocked workers lend theirs back.
  std::vector<orb::ObjectRef<int>> parents;
  for (int i = 0; i < 3; ++i) parents.push_back(orb::Task(NestedSum).Remote(10));
  for (const auto& v : orb::Get(parents, 60000)) CHECK(*v == 55);
}

TEST_CASE("a worker that dies mid-task is retried; past max_retries it is WorkerCrashedError", "[faults]") {
  orb::testing::EnsureCluster(TestConfig());
  std::string marker = TempPath("orb-die-once");
  std::filesystem::remove(marker);
  CHECK(*orb::Task(DieOnce).Remote(marker).Get(60000) == 7);
  std::filesystem::remove(marker);
  CHECK_THROWS_AS(orb::Task(AlwaysDie).SetMaxRetries(1).Remote(0).Get(60000), orb::WorkerCrashedError);
}

TEST_CASE("a task on a frozen worker is retried once its connection stops answering pings, not at its deadline",
          "[faults][regression]") {
  orb::testing::EnsureCluster(TestConfig());
  std::string marker = TempPath("orb-hang-once");
  std::filesystem::remove(marker);
  auto result = orb::Task(HangOnce).SetMaxRetries(1).Remote(marker);
  REQUIRE(orb::testing::WaitFor([&] { return std::filesystem::exists(marker); }, std::chrono::seconds(30)));
  pid_t frozen = std::stoi([&] {
    std::ifstream in(marker);
    std::string pid;
    in >> pid;
    return pid;
  }());
  // As a partitioned node looks to its peers: the process holds its socket open and
  // answers nothing.
  REQUIRE(::kill(frozen, SIGSTOP) == 0);
  auto stopped = std::chrono::steady_clock::now();
  CHECK(*result.Get(60000) == 11);
  CHECK(std::chrono::steady_clock::now() - stopped < std::chrono::seconds(30));  // keepalive: about 10 s
  ::kill(frozen, SIGKILL);
  std::filesystem::remove(marker);
}

TEST_CASE("a request no node can satisfy is InfeasibleError after the grace period", "[errors]") {
  orb::testing::EnsureCluster(TestConfig());
  CHECK_THROWS_AS(orb::Task(Plus).SetResource("GPU", 4).Remote(1, 1).Get(30000), orb::InfeasibleError);
  CHECK_THROWS_AS(orb::Task(Plus).SetResource("CPU", -1).Remote(1, 1), orb::Error);
  CHECK(*orb::Task(Plus).SetResource("CPU", 0.5).Remote(1, 1).Get() == 2);
}

TEST_CASE("bad input gets a typed error naming the cause", "[errors]") {
  orb::testing::EnsureCluster(TestConfig());
  SECTION("unknown function name") {
    orb::ObjectRef<int> r(orb::internal::SubmitTask("NoSuchFunction", {}, {}), orb::internal::AdoptRef{});
    try {
      orb::Get(r);
      FAIL("expected TaskError");
    } catch (const orb::TaskError& e) {
      CHECK_THAT(e.what(), Catch::Contains("NoSuchFunction") && Catch::Contains("not registered"));
    }
  }
  SECTION("an argument of the wrong type") {
    orb::internal::ArgData arg;
    arg.value = orb::internal::Serialize(std::string("not a number"));
    orb::internal::ArgData two;
    two.value = orb::internal::Serialize(2);
    orb::ObjectRef<int> r(orb::internal::SubmitTask("Plus", {arg, two}, {}), orb::internal::AdoptRef{});
    try {
      orb::Get(r);
      FAIL("expected TaskError");
    } catch (const orb::TaskError& e) {
      CHECK_THAT(e.what(), Catch::Contains("argument 0") && Catch::Contains("Plus"));
    }
  }
  SECTION("a value that does not deserialize to the requested type") {
    auto r = orb::Task(Plus).Remote(1, 2);
    orb::ObjectRef<std::vector<std::string>> wrong(r.data());
    CHECK_THROWS_AS(orb::Get(wrong), orb::Error);
  }
  SECTION("Get of an object whose owner is gone") {
    orb::internal::RefData orphan{std::string(20, '\x01'), "127.0.0.1:1"};
    orb::ObjectRef<int> r(orphan);
    CHECK_THROWS_AS(orb::Get(r, 10000), orb::ObjectLostError);
  }
}

TEST_CASE("runtime context and node listing describe where code runs", "[context]") {
  orb::testing::EnsureCluster(TestConfig());
  auto nodes = orb::Nodes();
  REQUIRE(nodes.size() == 1);
  CHECK(nodes[0].alive);
  CHECK(nodes[0].resources_total.at("CPU") == 2);
  CHECK(orb::GetRuntimeContext().GetTaskId().empty());
  std::string where = *orb::Task(WhereAmI).Remote(0).Get();
  CHECK(where.substr(0, 32) == nodes[0].node_id);
  CHECK(where.size() == 32 + 1 + 32);
  CHECK(orb::GetRuntimeContext().GetJobId().size() == 8);
}

TEST_CASE("a task that asks for GPUs sees its own in CUDA_VISIBLE_DEVICES; others see none", "[tasks][gpu]") {
  orb::testing::EnsureCluster(TestConfig());
  auto a = orb::Task(VisibleGpus).SetResources({{"CPU", 0.5}, {"GPU", 1}}).Remote(500);
  auto b = orb::Task(VisibleGpus).SetResources({{"CPU", 0.5}, {"GPU", 1}}).Remote(500);
  std::set<std::string> seen = {*a.Get(30000), *b.Get(30000)};
  CHECK(seen == std::set<std::string>{"0", "1"});  // both at once: one GPU each
  CHECK(*orb::Task(VisibleGpus).SetResources({{"CPU", 0.5}, {"GPU", 2}}).Remote(0).Get(30000) == "0,1");
  CHECK(*orb::Task(VisibleGpus).Remote(0).Get(30000) == "<unset>");
}

TEST_CASE("ORB_FUNC picks an overload by its parameter types", "[api][regression]") {
  orb::testing::EnsureCluster(TestConfig());
  CHECK(*orb::Task(ORB_FUNC(Overloaded)).Remote().Get() == 0);
  CHECK(*orb::Task(ORB_FUNC(Overloaded, int)).Remote(7).Get() == 7);
  CHECK(*orb::Task(ORB_FUNC(Overloaded, int, int)).Remote(6, 7).Get() == 42);
}

TEST_CASE("a task returning void: Get waits for it and throws what it threw", "[api][regression]") {
  orb::testing::EnsureCluster(TestConfig());
  std::string path = (std::filesystem::temp_directory_path() / ("orb-touch-" + std::to_string(::getpid()))).string();
  orb::ObjectRef<void> done = orb::Task(Touch).Remote(path);
  done.Get();
  CHECK(std::filesystem::exists(path));
  std::filesystem::remove(path);
  orb::Get(orb::Task(Touch).Remote(path));
  CHECK(std::filesystem::exists(path));
  std::filesystem::remove(path);
  std::vector<orb::ObjectRef<void>> many{orb::Task(Touch).Remote(path), orb::Task(Touch).Remote(path)};
  orb::Get(many);
  CHECK(orb::Wait(many, 2, 1000).ready.size() == 2);
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(orb::Task(Touch).Remote("").Get(), Catch::Contains("std::invalid_argument: no path given"));
}

TEST_CASE("Init while initialized is a no-op, and Init ignores the program's own arguments", "[api][regression]") {
  orb::testing::EnsureCluster(TestConfig());
  std::string job = orb::GetRuntimeContext().GetJobId();
  orb::Init();  // as in Ray: nothing happens
  CHECK(orb::IsInitialized());
  CHECK(orb::GetRuntimeContext().GetJobId() == job);
  // gtest strips its flags from argv and leaves null entries behind the new argc.
  char program[] = "app", gtest_flag[] = "--gtest_filter=*", mine[] = "--verbose";
  char* argv[] = {program, gtest_flag, mine, nullptr, nullptr};
  orb::Init(5, argv);
  CHECK(*orb::Task(Plus).Remote(1, 1).Get() == 2);
}

TEST_CASE("ORBLOG in a task writes to the worker's log, naming the task", "[api][logging]") {
  orb::testing::EnsureCluster(TestConfig());
  std::string where = *orb::Task(LogSomething).Remote("hello-log-42").Get();
  std::string session = where.substr(0, where.find('|')), task = where.substr(where.find('|') + 1);
  REQUIRE(!session.empty());
  std::string found;
  CHECK(orb::testing::WaitFor(
      [&] {
        for (const auto& entry : std::filesystem::directory_iterator(session + "/logs")) {
          std::ifstream in(entry.path());
          std::string line;
          while (std::getline(in, line)) {
            if (line.find("user says hello-log-42") != std::string::npos) found = line;
          }
        }
        return !found.empty();
      },
      std::chrono::seconds(5)));
  CHECK_THAT(found, Catch::Contains("[info]") && Catch::Contains("task " + task) &&
                        Catch::Contains("tasks_test.cc:"));
  ORBLOG(INFO) << "the driver may log too";
}

TEST_CASE("a task's runtime environment: env vars and working directory, checked at Remote()", "[api][runtime_env]") {
  orb::testing::EnsureCluster(TestConfig());
  CHECK(*orb::Task(GetEnvVar).Remote("ORB_TEST_KEY").Get() == "");
  orb::RuntimeEnv env;
  env.Set("env_vars", std::map<std::string, std::string>{{"ORB_TEST_KEY", "value1"}});
  CHECK(*orb::Task(GetEnvVar).SetRuntimeEnv(env).Remote("ORB_TEST_KEY").Get(30000) == "value1");
  // Workers are shared only within one environment.
  CHECK(*orb::Task(GetEnvVar).Remote("ORB_TEST_KEY").Get() == "");
  auto dir = std::filesystem::temp_directory_path() / ("orb-workdir-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  orb::RuntimeEnv in_dir;
  in_dir.Set("working_dir", dir.string());
  CHECK(*orb::Task(CurrentDir).SetRuntimeEnv(in_dir).Remote().Get(30000) == dir.string());
  std::filesystem::remove_all(dir);
  // Bad input: a field orb does not run, a malformed value, a directory that is not there.
  orb::RuntimeEnv pip;
  pip.SetJsonStr("pip", R"({"packages":["requests"]})");
  CHECK_THROWS_AS(orb::Task(CurrentDir).SetRuntimeEnv(pip).Remote(), orb::RuntimeEnvError);
  orb::RuntimeEnv bad_vars;
  bad_vars.Set("env_vars", std::vector<int>{1, 2});
  CHECK_THROWS_WITH(orb::Task(CurrentDir).SetRuntimeEnv(bad_vars).Remote(), Catch::Contains("env_vars"));
  orb::RuntimeEnv missing;
  missing.Set("working_dir", std::string("/no/such/dir/anywhere"));
  CHECK_THROWS_AS(orb::Task(CurrentDir).SetRuntimeEnv(missing).Remote().Get(30000), orb::RuntimeEnvError);
  CHECK(*orb::Task(Plus).Remote(1, 2).Get() == 3);  // the node keeps serving
}

TEST_CASE("RuntimeEnv keeps fields as JSON, as Ray's does", "[api][runtime_env]") {
  orb::RuntimeEnv env;
  CHECK(env.Empty());
  env.Set("working_dir", std::string("/tmp"));
  CHECK(env.Get<std::string>("working_dir") == "/tmp");
  CHECK_THROWS_AS(env.Get<int>("working_dir"), orb::RuntimeEnvError);
  CHECK_THROWS_AS(env.Get<std::string>("env_vars"), orb::RuntimeEnvError);
  env.SetJsonStr("pip", R"({"packages":["requests","tensorflow"],"pip_check":false})");
  CHECK(env.GetJsonStr("pip") == R"({"packages":["requests","tensorflow"],"pip_check":false})");
  CHECK_THROWS_AS(env.SetJsonStr("pip", "{123"), orb::RuntimeEnvError);
  auto copy = orb::RuntimeEnv::Deserialize(env.Serialize());
  CHECK(copy.Contains("pip"));
  CHECK(copy.Remove("pip"));
  CHECK_FALSE(copy.Remove("pip"));
  CHECK_THROWS_AS(orb::RuntimeEnv::Deserialize("[1, 2"), orb::RuntimeEnvError);
}

TEST_CASE("a task that kills its worker fails alone: tasks pushed with it are not charged", "[faults][regression]") {
  orb::testing::EnsureCluster(TestConfig());
  std::vector<orb::ObjectRef<int>> refs;
  for (int i = 0; i < 100; ++i) refs.push_back(orb::Task(Work20ms).Remote(i, i % 10 == 9));
  int healthy_ok = 0, poison_failed = 0;
  for (int i = 0; i < 100; ++i) {
    try {
      int v = *refs[i].Get(120000);
      CHECK(v == i);
      healthy_ok += (i % 10 != 9);
    } catch (const orb::WorkerCrashedError& e) {
      CHECK(i % 10 == 9);  // only a poison task may fail
      CHECK_THAT(e.what(), Catch::Contains("Work20ms") && Catch::Contains("killed by signal 6 (SIGABRT)") &&
                               Catch::Contains("3 retries used"));
      ++poison_failed;
    }
  }
  CHECK(healthy_ok == 90);
  CHECK(poison_failed == 10);
}

namespace {
// Sleeps `ms`, then leaves `marker` behind: whether it ran to its end.
int SleepThenMark(int ms, std::string marker) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  std::ofstream(marker) << "ran";
  return ms;
}
}  // namespace
ORB_REMOTE(SleepThenMark);

TEST_CASE("Cancel: a queued task never runs; force kills a running one's worker; finished ones keep results",
          "[tasks][cancel]") {
  orb::testing::EnsureCluster(TestConfig());
  std::string dir = TempPath("orb-cancel");
  std::filesystem::create_directories(dir);
  // Both CPUs busy: the third task waits in this process's queue.
  auto busy1 = orb::Task(SleepThenMark).Remote(1500, dir + "/busy1");
  auto busy2 = orb::Task(SleepThenMark).Remote(1500, dir + "/busy2");
  auto queued = orb::Task(SleepThenMark).Remote(0, dir + "/queued");
  orb::Cancel(queued);
  CHECK_THROWS_AS(queued.Get(10000), orb::TaskCancelledError);
  CHECK(*busy1.Get(30000) == 1500);
  CHECK(*busy2.Get(30000) == 1500);
  CHECK_FALSE(std::filesystem::exists(dir + "/queued"));

  // C++ code is not interrupted: force ends its worker, and the task with it.
  auto running = orb::Task(SleepThenMark).Remote(20000, dir + "/forced");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  orb::Cancel(running, /*force=*/true);
  auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(running.Get(30000), orb::TaskCancelledError);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(15));
  CHECK_FALSE(std::filesystem::exists(dir + "/forced"));
  CHECK(*orb::Task(Plus).Remote(2, 3).Get(30000) == 5);  // a new worker serves on

  auto done = orb::Task(Plus).Remote(1, 1);
  CHECK(*done.Get(30000) == 2);
  orb::Cancel(done);
  CHECK(*done.Get() == 2);
  CHECK_THROWS_AS(orb::Cancel(orb::Put(1)), std::invalid_argument);
}

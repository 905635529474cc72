// Worker isolation without processes: GPU shares, the memory monitor's choice, and the
// cgroup files a worker's limits become (on directory trees laid out as v1 and v2 mounts).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "raylet/gpu_allocator.h"
#include "raylet/memory_monitor.h"
#include "raylet/worker_cgroups.h"

using namespace orb;
namespace fs = std::filesystem;

namespace {

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A scratch directory, removed at the end of the test.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("orb-cgroup-test-" + std::to_string(::getpid()) + "-" +
                                               NodeID::FromRandom().Hex().substr(0, 6));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() { fs::remove_all(path); }
};

// The one directory under `dir` whose name starts with `prefix`.
fs::path Only(const fs::path& dir, const std::string& prefix) {
  fs::path found;
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) found = e.path(), ++n;
  }
  REQUIRE(n == 1);
  return found;
}

}  // namespace

TEST_CASE("four quarter-GPU leases share one GPU, a fifth does not fit, and a whole GPU never shares",
          "[isolation][gpu]") {
  GpuAllocator gpus(1);
  for (int i = 0; i < 4; ++i) {
    auto grant = gpus.Allocate(0.25);
    REQUIRE(grant);
    CHECK(grant->ids == std::vector<int>{0});
  }
  CHECK_FALSE(gpus.Fits(0.25));
  CHECK_FALSE(gpus.Allocate(0.01));
  gpus.Release(GpuGrant{{0}, GpuAllocator::ToUnits(0.25)});
  CHECK(gpus.FreeOn(0) == Approx(0.25));
  CHECK_FALSE(gpus.Fits(1));  // partly used: not a whole GPU

  GpuAllocator two(2);
  auto half = two.Allocate(0.5);
  auto third = two.Allocate(0.3);  // packed onto the fuller GPU, so GPU 1 stays whole
  REQUIRE(half);
  REQUIRE(third);
  CHECK(third->ids == half->ids);
  auto whole = two.Allocate(1);
  REQUIRE(whole);
  CHECK(whole->ids != half->ids);
  CHECK_FALSE(two.Fits(0.25));  // 0.2 left on one GPU, none on the other
  CHECK_FALSE(two.Allocate(2));
  two.Release(*whole);
  auto both = GpuAllocator(2).Allocate(2);
  REQUIRE(both);
  CHECK(both->ids == std::vector<int>{0, 1});
}

TEST_CASE("a fraction above one GPU is refused with the reason", "[isolation][gpu]") {
  CHECK(CheckGpuRequest(1.5).find("must be a whole number") != std::string::npos);
  CHECK(CheckGpuRequest(0.5).empty());
  CHECK(CheckGpuRequest(2).empty());
}

TEST_CASE("with MPS a fractional lease gets its share of the GPU and its memory cap", "[isolation][gpu]") {
  auto env = GpuEnv(0.25, 2.0 * (1 << 30), 1, /*mps=*/true);
  CHECK(env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25");
  CHECK(env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=2048M");
  CHECK(GpuEnv(0.25, 0, 1, /*mps=*/false).empty());
  CHECK(GpuEnv(1, 0, 1, /*mps=*/true).empty());  // a whole GPU needs no share
  CHECK(GpuEnv(0.001, 0, 1, true)["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "1");
}

TEST_CASE("the memory monitor kills the newest retriable worker first", "[isolation][memory]") {
  auto t0 = std::chrono::steady_clock::now();
  using std::chrono::seconds;
  std::vector<OomCandidate> c = {
      {WorkerID::FromRandom(), 1, false, t0 + seconds(9), 100},  // newest, not retriable
      {WorkerID::FromRandom(), 2, true, t0 + seconds(1), 900},
      {WorkerID::FromRandom(), 3, true, t0 + seconds(5), 10},  // newest retriable
  };
  CHECK(ChooseOomVictim(c) == 2u);
  c[2].retriable = c[1].retriable = false;
  CHECK(ChooseOomVictim(c) == 0u);
  CHECK_FALSE(ChooseOomVictim({}));
}

TEST_CASE("the memory monitor kills one worker above its threshold, names why, and waits for it", "[isolation][memory]") {
  MemoryUse use{50, 100};
  std::vector<std::string> killed;
  OomCandidate only{WorkerID::FromRandom(), ::getpid(), true, std::chrono::steady_clock::now(), 3 << 20};
  MemoryMonitor monitor(
      {0.9, std::chrono::milliseconds(10)}, "node1", [&] { return use; }, [&] { return std::vector{only}; },
      [&](const OomCandidate&, const std::string& why) { killed.push_back(why); });
  monitor.Check();
  CHECK(killed.empty());
  use.used = 95;
  monitor.Check();
  REQUIRE(killed.size() == 1);
  CHECK(killed[0].find("node node1") != std::string::npos);
  CHECK(killed[0].find("95.0%") != std::string::npos);
  CHECK(killed[0].find("threshold 90.0%") != std::string::npos);
  CHECK(killed[0].find("3.0 MiB") != std::string::npos);
  monitor.Check();  // the victim (this process, in the test) still runs: no second kill
  CHECK(killed.size() == 1);
  CHECK(monitor.Describe().find("1 worker(s) killed") != std::string::npos);
  MemoryMonitor off({1.0, std::chrono::milliseconds(10)}, "n", [&] { return use; }, [&] { return std::vector{only}; },
                    [&](const OomCandidate&, const std::string& why) { killed.push_back(why); });
  off.Check();
  CHECK(killed.size() == 1);
  CHECK(off.Describe() == "off");
}

TEST_CASE("on a v1 hierarchy a worker's CPU and memory requests become its quota and limit", "[isolation][cgroup]") {
  ScratchDir dir;
  fs::path root = dir.path / "mnt";
  for (const char* c : {"cpu", "cpuacct", "memory"}) Put(root / c / "cgroup.procs", "");
  Put(dir.path / "self", "4:memory:/pod/x\n3:cpuacct:/\n2:cpu:/\n0::/\n");
  fs::create_directories(root / "memory/pod/x");
  auto cgroups = WorkerCgroups::Create("abcd", {root.string(), (dir.path / "self").string()});
  REQUIRE(cgroups.ok());
  CHECK((*cgroups)->version() == 1);
  fs::path cpu = Only(root / "cpu", "orb-abcd-");
  fs::path memory = Only(root / "memory/pod/x", "orb-abcd-");  // under the raylet's own cgroup
  WorkerID worker = WorkerID::FromRandom();
  REQUIRE((*cgroups)->Add(worker, 4242).ok());
  std::string leaf = "worker-" + worker.Hex().substr(0, 12);
  CHECK(Slurp(cpu / leaf / "cgroup.procs") == "4242");
  CHECK(Slurp(memory / leaf / "cgroup.procs") == "4242");
  REQUIRE((*cgroups)->SetLimits(worker, {1.5, 256 << 20}).ok());
  CHECK(Slurp(cpu / leaf / "cpu.cfs_quota_us") == "150000");
  CHECK(Slurp(cpu / leaf / "cpu.cfs_period_us") == "100000");
  CHECK(Slurp(memory / leaf / "memory.limit_in_bytes") == std::to_string(256 << 20));
  CHECK((*cgroups)->LimitsOf(worker).cpus == 1.5);
  REQUIRE((*cgroups)->SetLimits(worker, {0, 0}).ok());  // lifted
  CHECK(Slurp(cpu / leaf / "cpu.cfs_quota_us") == "-1");
  CHECK(Slurp(memory / leaf / "memory.limit_in_bytes") == "-1");
  Put(root / "cpuacct" / Only(root / "cpuacct", "orb-").filename() / leaf / "cpuacct.usage", "2500000000");
  Put(memory / leaf / "memory.usage_in_bytes", "1048576");
  Put(memory / leaf / "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
  auto usage = (*cgroups)->Usage(worker);
  REQUIRE(usage.ok());
  CHECK(usage->cpu_seconds == Approx(2.5));
  CHECK(usage->memory_bytes == 1048576u);
  CHECK(usage->oom_kills == 1u);
  CHECK((*cgroups)->Usage(WorkerID::FromRandom()).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("on a v2 hierarchy limits go to cpu.max and memory.max, controllers enabled below", "[isolation][cgroup]") {
  ScratchDir dir;
  fs::path root = dir.path / "mnt";
  Put(root / "cgroup.controllers", "cpuset cpu io memory pids\n");
  Put(root / "raylet/cgroup.controllers", "cpu memory pids\n");
  Put(dir.path / "self", "0::/raylet\n");
  auto cgroups = WorkerCgroups::Create("ef01", {root.string(), (dir.path / "self").string()});
  REQUIRE(cgroups.ok());
  CHECK((*cgroups)->version() == 2);
  fs::path base = Only(root / "raylet", "orb-ef01-");
  CHECK(Slurp(root / "raylet/cgroup.subtree_control") == "+cpu +memory");
  CHECK(Slurp(base / "cgroup.subtree_control") == "+cpu +memory");
  WorkerID worker = WorkerID::FromRandom();
  REQUIRE((*cgroups)->Add(worker, 77).ok());
  std::string leaf = "worker-" + worker.Hex().substr(0, 12);
  Put(base / leaf / "memory.swap.max", "max");
  REQUIRE((*cgroups)->SetLimits(worker, {1, 64 << 20}).ok());
  CHECK(Slurp(base / leaf / "cpu.max") == "100000 100000");
  CHECK(Slurp(base / leaf / "memory.max") == std::to_string(64 << 20));
  CHECK(Slurp(base / leaf / "memory.swap.max") == "0");  // killed past its limit, not swapped
  Put(base / leaf / "cpu.stat", "usage_usec 1500000\nuser_usec 1000000\n");
  Put(base / leaf / "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
  auto usage = (*cgroups)->Usage(worker);
  REQUIRE(usage.ok());
  CHECK(usage->cpu_seconds == Approx(1.5));
  CHECK(usage->oom_kills == 1u);
}

TEST_CASE("without cpu and memory controllers the cgroups are refused naming what is missing", "[isolation][cgroup]") {
  ScratchDir dir;
  fs::path root = dir.path / "mnt";
  Put(root / "cgroup.controllers", "pids io\n");
  Put(dir.path / "self", "0::/\n");
  auto v2 = WorkerCgroups::Create("x", {root.string(), (dir.path / "self").string()});
  REQUIRE_FALSE(v2.ok());
  CHECK(v2.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(v2.status().message()).find("does not offer the cpu controller") != std::string::npos);
  fs::remove(root / "cgroup.controllers");
  Put(root / "cpu/cgroup.procs", "");
  auto v1 = WorkerCgroups::Create("x", {root.string(), (dir.path / "self").string()});
  REQUIRE_FALSE(v1.ok());
  CHECK(std::string(v1.status().message()).find("no cgroup memory controller") != std::string::npos);
  auto none = WorkerCgroups::Create("x", {root.string(), (dir.path / "missing").string()});
  CHECK(std::string(none.status().message()).find("cannot read") != std::string::npos);
}

// Worker isolation on a real node: each worker in a cgroup with its lease's CPU and
// memory, the memory monitor killing the newest retriable worker (not the raylet), and
// fractional GPUs sharing one declared GPU with their MPS share. Where this host gives
// no cgroups the cgroup cases say so and stop (the raylet logs why).
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "orb/api.h"
#include "orb/state.h"
#include "test_cluster.h"

namespace {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// This process's cgroup directory for `controller` ("" for v2), as the worker sees it.
std::string OwnCgroupDir(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  bool v2 = fs::exists("/sys/fs/cgroup/cgroup.controllers");
  while (std::getline(in, line)) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    std::string list = "," + line.substr(a + 1, b - a - 1) + ",";
    std::string path = line.substr(b + 1);
    if (v2 ? list == ",," : list.find("," + controller + ",") != std::string::npos) {
      std::string mount = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/" + controller;
      return fs::exists(mount + path) ? mount + path : mount;
    }
  }
  return "";
}

// The worker's memory cgroup (where orb puts it): empty when it is in none of orb's.
std::string WorkerCgroup() {
  std::string dir = OwnCgroupDir("memory");
  return dir.find("/orb-") == std::string::npos ? "" : dir;
}
ORB_REMOTE(WorkerCgroup);

uint64_t FirstNumber(const std::string& text) { return text.empty() ? 0 : std::strtoull(text.c_str(), nullptr, 10); }

uint64_t CgroupCpuMicros() {
  if (fs::exists("/sys/fs/cgroup/cgroup.controllers")) {
    std::istringstream stat(Slurp(OwnCgroupDir("") + "/cpu.stat"));
    std::string key;
    uint64_t value = 0;
    while (stat >> key >> value) {
      if (key == "usage_usec") return value;
    }
    return 0;
  }
  return FirstNumber(Slurp(OwnCgroupDir("cpuacct") + "/cpuacct.usage")) / 1000;
}

// Spins `threads` threads for `ms` of wall time: {CPU seconds its cgroup used meanwhile,
// wall seconds, its CPU quota per 100 ms period in µs (-1: none)}.
std::vector<double> Spin(int threads, int ms) {
  std::string cpu = OwnCgroupDir(fs::exists("/sys/fs/cgroup/cgroup.controllers") ? "" : "cpu");
  double quota = fs::exists(cpu + "/cpu.max") ? static_cast<double>(FirstNumber(Slurp(cpu + "/cpu.max")))
                                              : std::strtod(Slurp(cpu + "/cpu.cfs_quota_us").c_str(), nullptr);
  if (Slurp(cpu + "/cpu.max").rfind("max", 0) == 0) quota = -1;
  uint64_t before = CgroupCpuMicros();
  auto start = std::chrono::steady_clock::now();
  auto until = start + std::chrono::milliseconds(ms);
  std::vector<std::thread> spinners;
  for (int i = 0; i < threads; ++i) {
    spinners.emplace_back([until] {
      volatile uint64_t x = 0;
      while (std::chrono::steady_clock::now() < until) x = x + 1;
    });
  }
  for (auto& t : spinners) t.join();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {static_cast<double>(CgroupCpuMicros() - before) / 1e6, wall, quota};
}
ORB_REMOTE(Spin);

// Allocates up to `mib` MiB, touching every page, then holds it a while. With a marker
// path: an attempt that finds the marker (a retry) allocates nothing and returns -1.
int64_t Allocate(int64_t mib, std::string marker) {
  if (!marker.empty()) {
    if (fs::exists(marker)) return -1;
    std::ofstream(marker) << "first attempt\n";
  }
  std::vector<char*> chunks;
  for (int64_t i = 0; i < mib / 16; ++i) {
    char* chunk = static_cast<char*>(std::malloc(16 << 20));
    if (!chunk) break;
    std::memset(chunk, 1, 16 << 20);
    chunks.push_back(chunk);
  }
  std::this_thread::sleep_for(std::chrono::seconds(10));
  for (char* c : chunks) std::free(c);
  return static_cast<int64_t>(chunks.size()) * 16;
}
ORB_REMOTE(Allocate);

int Pid() { return static_cast<int>(::getpid()); }
ORB_REMOTE(Pid);

class Keeper {
 public:
  static Keeper* Create() { return new Keeper(); }
  int Pid() { return static_cast<int>(::getpid()); }
};
ORB_REMOTE(Keeper::Create, &Keeper::Pid);

// The GPU environment a task got, with when it started and ended (ms since the epoch).
std::vector<std::string> GpuShare(int hold_ms) {
  auto now = [] {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
  };
  std::string start = now();
  std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "<unset>");
  };
  return {env("CUDA_VISIBLE_DEVICES"), env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
          env("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), start, now()};
}
ORB_REMOTE(GpuShare);

// The machine's memory in use now, as a fraction (what the raylet's monitor reads).
double MachineMemoryUse(uint64_t* total_out) {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0, total = 0, available = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemTotal:") total = kib << 10;
    if (key == "MemAvailable:") available = kib << 10;
  }
  *total_out = total;
  return total == 0 ? 0 : static_cast<double>(total - available) / static_cast<double>(total);
}

// The monitor's threshold sits 1.5 GiB above what the machine uses when the cluster
// starts: a task that allocates 6 GiB crosses it, the others stay far below.
void EnsureIsolatedCluster() {
  if (orb::IsInitialized()) return;
  uint64_t total = 0;
  double used = MachineMemoryUse(&total);
  double threshold = std::min(0.99, used + 1.5 * (1 << 30) / static_cast<double>(total));
  orb::Config config;
  config.num_cpus = 8;  // accounted: the fifth quarter-GPU task must wait for a GPU, not a CPU
  config.num_gpus = 1;
  config.resources = {{"GPU_memory", 8.0 * (1 << 30)}};
  config.object_store_memory = 64ll << 20;
  config.head_args = {"--gpu-mps", "on", "--memory-usage-threshold", std::to_string(threshold),
                      "--memory-monitor-interval-ms", "100"};
  orb::testing::EnsureCluster(config);
}

bool InCgroups() {
  std::string where = *orb::Task(WorkerCgroup).Remote().Get(60000);
  if (where.empty()) WARN("workers are not in cgroups on this host (the raylet's log says why): cgroup checks skipped");
  return !where.empty();
}

}  // namespace

TEST_CASE("a task asking 1 CPU that spins 2 threads gets about one CPU of time", "[isolation][cgroup]") {
  EnsureIsolatedCluster();
  if (!InCgroups()) return;
  auto spun = *orb::Task(Spin).SetResource("CPU", 1).Remote(2, 2000).Get(60000);
  INFO("cgroup CPU seconds " << spun[0] << " over " << spun[1] << " s of wall time, quota " << spun[2]);
  CHECK(spun[2] == 100000);  // 1 CPU: 100 ms of CPU time per 100 ms period
  double cpus = spun[0] / spun[1];
  CHECK(cpus < 1.25);  // two spinning threads would take two CPUs without the quota
  CHECK(cpus > 0.4);
  // Without a CPU request there is no quota.
  CHECK((*orb::Task(Spin).SetResource("CPU", 0).Remote(1, 10).Get(60000))[2] == -1);
}

TEST_CASE("a task allocating past its memory request is killed as OutOfMemoryError; the raylet and other workers live",
          "[isolation][cgroup][memory]") {
  EnsureIsolatedCluster();
  if (!InCgroups()) return;
  auto keeper = orb::Actor(Keeper::Create).Remote();
  int keeper_pid = *keeper.Task(&Keeper::Pid).Remote().Get(60000);
  auto hog = orb::Task(Allocate).SetResource("memory", 128 << 20).SetMaxRetries(0).Remote(1024, "");
  CHECK_THROWS_AS(hog.Get(60000), orb::OutOfMemoryError);
  CHECK_THROWS_WITH(hog.Get(60000), Catch::Contains("more memory than its limit of 128 MiB"));
  CHECK(*keeper.Task(&Keeper::Pid).Remote().Get(60000) == keeper_pid);
  CHECK(*orb::Task(Pid).Remote().Get(60000) > 0);
  // Within its request it runs to the end.
  CHECK(*orb::Task(Allocate).SetResource("memory", 512 << 20).Remote(64, "").Get(60000) == 64);
}

TEST_CASE("with memory_growth, a task killed for memory is retried with a larger request until it fits",
          "[isolation][cgroup][memory]") {
  EnsureIsolatedCluster();
  if (!InCgroups()) return;
  // 128 MiB, then 512 MiB (both killed), then 2 GiB: it runs.
  CHECK(*orb::Task(Allocate).SetResource("memory", 128 << 20).SetMemoryGrowth(4).SetMaxRetries(3).Remote(1024, "")
             .Get(120000) == 1024);
  CHECK(orb::testing::WaitFor(
      [] {
        for (const auto& t : orb::state::ListTasks({{"error_type", "=", "OUT_OF_MEMORY"}})) {
          if (t.error_message.find("retried with memory 536870912 bytes") != std::string::npos) return true;
        }
        return false;
      },
      std::chrono::seconds(15)));
  // Capped at 256 MiB: the retries stay there, and it fails.
  auto capped = orb::Task(Allocate).SetResource("memory", 128 << 20).SetMemoryGrowth(4, 256 << 20).SetMaxRetries(2);
  CHECK_THROWS_WITH(capped.Remote(1024, "").Get(120000), Catch::Contains("more memory than its limit of 256 MiB"));
}

TEST_CASE("a task taking the node past the memory threshold is killed by the monitor, then retried; the raylet lives",
          "[isolation][memory]") {
  EnsureIsolatedCluster();
  auto doomed = orb::Task(Allocate).SetMaxRetries(0).Remote(6144, "");
  try {
    doomed.Get(120000);
    FAIL("the task was not killed");
  } catch (const orb::OutOfMemoryError& e) {
    std::string what = e.what();
    CHECK(what.find("killed by the memory monitor of node") != std::string::npos);
    CHECK(what.find("above the threshold") != std::string::npos);
    CHECK(what.find("this worker used") != std::string::npos);
  }
  std::string marker = (fs::temp_directory_path() / ("orb-oom-retry-" + std::to_string(::getpid()))).string();
  fs::remove(marker);
  // The first attempt allocates and is killed; the retry finds the marker and returns.
  CHECK(*orb::Task(Allocate).SetMaxRetries(1).Remote(6144, marker).Get(120000) == -1);
  fs::remove(marker);
  // Both kills are in the task history (events arrive within a second or so).
  CHECK(orb::testing::WaitFor(
      [] { return orb::state::ListTasks({{"error_type", "=", "OUT_OF_MEMORY"}}).size() >= 2; },
      std::chrono::seconds(15)));
  CHECK(*orb::Task(Pid).Remote().Get(60000) > 0);
}

TEST_CASE("four quarter-GPU tasks share the one GPU with their MPS share; a fifth waits for one of them",
          "[isolation][gpu]") {
  EnsureIsolatedCluster();
  std::vector<orb::ObjectRef<std::vector<std::string>>> refs;
  for (int i = 0; i < 5; ++i) {
    refs.push_back(orb::Task(GpuShare)
                       .SetResources({{"CPU", 0.5}, {"GPU", 0.25}, {"GPU_memory", 1 << 30}})
                       .Remote(6000));
  }
  std::vector<std::vector<std::string>> got;
  for (auto& r : refs) got.push_back(*r.Get(120000));
  std::vector<int64_t> starts, ends;
  for (const auto& g : got) {
    CHECK(g[0] == "0");
    CHECK(g[1] == "25");
    CHECK(g[2] == "0=1024M");
    starts.push_back(std::stoll(g[3]));
    ends.push_back(std::stoll(g[4]));
  }
  // The last to start began only after another had ended: at most four held the GPU.
  size_t last = std::max_element(starts.begin(), starts.end()) - starts.begin();
  int64_t first_end = *std::min_element(ends.begin(), ends.end());
  CHECK(starts[last] >= first_end);
  int overlapping = 0;
  for (size_t i = 0; i < starts.size(); ++i) overlapping += i != last && starts[i] < first_end;
  CHECK(overlapping == 4);
  // A whole GPU does not share: it runs once the fractions are gone, and sees no share.
  auto whole = *orb::Task(GpuShare).SetResources({{"CPU", 0.5}, {"GPU", 1}}).Remote(0).Get(60000);
  CHECK(whole[0] == "0");
  CHECK(whole[1] == "<unset>");
  CHECK_THROWS_WITH(orb::Task(GpuShare).SetResource("GPU", 1.5).Remote(0).Get(60000),
                    Catch::Contains("must be a whole number"));
}

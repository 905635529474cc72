#include "raylet/worker_cgroups.h"

#include "common/session.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace orb {
namespace {

namespace fs = std::filesystem;

// The leaf that a v2 cgroup's own processes move to, so that it may enable controllers
// for its children (the "no internal processes" rule).
constexpr const char* kV2ProcessLeaf = "orb-leaf";

std::string ErrnoText(int err) { return std::strerror(err); }

absl::Status WriteFile(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::FailedPreconditionError("cannot open " + path + ": " + ErrnoText(errno));
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    return absl::FailedPreconditionError("cannot write '" + value + "' to " + path + ": " + ErrnoText(err));
  }
  return absl::OkStatus();
}

absl::Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return absl::OkStatus();
  return absl::FailedPreconditionError("cannot create " + path + ": " + ErrnoText(errno));
}

// The file's text; empty when it cannot be read.
std::string ReadFile(const std::string& path) { return ReadFileToString(path).value_or(""); }

uint64_t ReadNumber(const std::string& path) {
  std::string text = ReadFile(path);
  if (text.empty()) return 0;
  try {
    return std::stoull(text);
  } catch (...) {
    return 0;
  }
}

// The value of `key` in a "key value" per line file (cpu.stat, memory.events, memory.oom_control).
uint64_t ReadKeyed(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

// controller (or "" for v2) -> path, from /proc/self/cgroup.
std::map<std::string, std::string> ReadSelf(const std::string& file) {
  std::map<std::string, std::string> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find(':');
    size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    if (controllers.empty()) {
      out[""] = path;
      continue;
    }
    std::stringstream list(controllers);
    std::string c;
    while (std::getline(list, c, ',')) out[c] = path;
  }
  return out;
}

bool IsDir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

// The directory of a cgroup at `path` of the hierarchy mounted at `mount`: in a container
// without a cgroup namespace the mount shows only the container's own cgroup.
std::string CgroupDir(const std::string& mount, const std::string& path) {
  std::string dir = mount + (path == "/" ? "" : path);
  return IsDir(dir) ? dir : mount;
}

// Removes what raylets that were killed left in `base`: orb-<node>-<pid> whose pid is gone.
void RemoveStale(const std::string& base) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("orb-", 0) != 0 || name == kV2ProcessLeaf || !entry.is_directory(ec)) continue;
    size_t dash = name.rfind('-');
    pid_t pid = 0;
    try {
      pid = static_cast<pid_t>(std::stol(name.substr(dash + 1)));
    } catch (...) {
      continue;
    }
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    for (const auto& worker : fs::directory_iterator(entry.path(), ec)) {
      if (worker.is_directory(ec)) ::rmdir(worker.path().c_str());
    }
    if (::rmdir(entry.path().c_str()) == 0) spdlog::info("removed cgroup {} left by a raylet that was killed", entry.path().string());
  }
}

// Removes `dir`, waiting a moment for processes that were killed to leave it.
bool RemoveDir(const std::string& dir, std::chrono::milliseconds patience) {
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (::rmdir(dir.c_str()) != 0) {
    if (errno == ENOENT) return true;
    if (errno != EBUSY || std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerCgroups>> WorkerCgroups::Create(const std::string& name, CgroupPaths paths) {
  std::string dir_name = "orb-" + name + "-" + std::to_string(::getpid());
  auto self = ReadSelf(paths.self_cgroup);
  if (self.empty()) return absl::FailedPreconditionError("cannot read " + paths.self_cgroup);
  // Pure v2: the unified hierarchy is mounted at the root. A v1/v2 hybrid mounts it at
  // unified/ with no controllers (they are bound to the v1 hierarchies).
  if (fs::exists(paths.mount_root + "/cgroup.controllers")) {
    if (!self.count("")) return absl::FailedPreconditionError(paths.self_cgroup + " names no v2 cgroup");
    return CreateV2(dir_name, paths, self[""]);
  }
  return CreateV1(dir_name, paths);
}

absl::StatusOr<std::unique_ptr<WorkerCgroups>> WorkerCgroups::CreateV1(const std::string& dir_name,
                                                                     const CgroupPaths& paths) {
  auto self = ReadSelf(paths.self_cgroup);
  std::vector<Hierarchy> hierarchies;
  std::map<std::string, size_t> by_mount;  // co-mounted controllers (cpu,cpuacct) share one
  for (const char* controller : {"cpu", "cpuacct", "memory"}) {
    std::string mount = paths.mount_root + "/" + controller;
    if (!fs::exists(mount + "/cgroup.procs")) continue;
    std::error_code ec;
    std::string real = fs::canonical(mount, ec).string();
    if (ec) real = mount;
    auto [it, fresh] = by_mount.emplace(real, hierarchies.size());
    if (fresh) {
      std::string base = CgroupDir(mount, self.count(controller) ? self[controller] : "/");
      RemoveStale(base);
      hierarchies.push_back(Hierarchy{base + "/" + dir_name});
    }
    Hierarchy& h = hierarchies[it->second];
    h.cpu |= std::string(controller) == "cpu";
    h.cpuacct |= std::string(controller) == "cpuacct";
    h.memory |= std::string(controller) == "memory";
  }
  bool cpu = false, memory = false;
  for (const auto& h : hierarchies) cpu |= h.cpu, memory |= h.memory;
  if (!cpu || !memory) {
    return absl::FailedPreconditionError("no cgroup " + std::string(!cpu ? "cpu" : "memory") + " controller under " +
                                         paths.mount_root + " (v1), and no v2 hierarchy there");
  }
  for (const auto& h : hierarchies) {
    if (auto s = MakeDir(h.dir); !s.ok()) {
      for (const auto& made : hierarchies) ::rmdir(made.dir.c_str());
      return s;
    }
  }
  return std::unique_ptr<WorkerCgroups>(new WorkerCgroups(1, std::move(hierarchies)));
}

absl::StatusOr<std::unique_ptr<WorkerCgroups>> WorkerCgroups::CreateV2(const std::string& dir_name,
                                                                     const CgroupPaths& paths,
                                                                     const std::string& self) {
  std::string path = self;
  // A raylet started beside another one finds itself in the leaf the first one made.
  std::string leaf_suffix = std::string("/") + kV2ProcessLeaf;
  if (path.size() > leaf_suffix.size() && path.compare(path.size() - leaf_suffix.size(), leaf_suffix.size(), leaf_suffix) == 0) {
    path = path.substr(0, path.size() - leaf_suffix.size());
  }
  std::string base = CgroupDir(paths.mount_root, path);
  std::string controllers = ReadFile(base + "/cgroup.controllers");
  std::stringstream words(controllers);
  bool cpu = false, memory = false;
  for (std::string w; words >> w;) cpu |= w == "cpu", memory |= w == "memory";
  if (!cpu || !memory) {
    return absl::FailedPreconditionError("the cgroup " + base + " does not offer the " +
                                         std::string(!cpu ? "cpu" : "memory") +
                                         " controller (cgroup.controllers: '" + controllers + "')");
  }
  RemoveStale(base);
  if (auto s = WriteFile(base + "/cgroup.subtree_control", "+cpu +memory"); !s.ok()) {
    // Its processes (this raylet among them) move to a leaf; then the controllers can go down.
    std::string leaf = base + "/" + kV2ProcessLeaf;
    if (auto made = MakeDir(leaf); !made.ok()) return made;
    std::string procs = ReadFile(base + "/cgroup.procs");
    std::stringstream list(procs);
    int moved = 0;
    for (std::string pid; list >> pid;) moved += WriteFile(leaf + "/cgroup.procs", pid).ok();
    if (auto again = WriteFile(base + "/cgroup.subtree_control", "+cpu +memory"); !again.ok()) {
      return absl::FailedPreconditionError(std::string(again.message()) + " (after moving " + std::to_string(moved) +
                                           " process(es) to " + leaf + ")");
    }
    spdlog::info("moved {} process(es) of cgroup {} to {} so that workers' cgroups get cpu and memory controllers",
                 moved, base, leaf);
  }
  std::string dir = base + "/" + dir_name;
  if (auto s = MakeDir(dir); !s.ok()) return s;
  if (auto s = WriteFile(dir + "/cgroup.subtree_control", "+cpu +memory"); !s.ok()) {
    ::rmdir(dir.c_str());
    return s;
  }
  return std::unique_ptr<WorkerCgroups>(new WorkerCgroups(2, {Hierarchy{dir, true, true, true}}));
}

WorkerCgroups::~WorkerCgroups() {
  workers_.clear();
  for (const auto& h : hierarchies_) {
    // Workers killed at shutdown leave their cgroups as soon as they exit.
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(h.dir, ec)) {
      if (entry.is_directory(ec)) RemoveDir(entry.path().string(), std::chrono::milliseconds(1000));
    }
    if (!RemoveDir(h.dir, std::chrono::milliseconds(1000))) {
      spdlog::warn("cannot remove cgroup {}: {}", h.dir, ErrnoText(errno));
    }
  }
}

std::string WorkerCgroups::Describe() const {
  std::string out = "cgroup v" + std::to_string(version_) + " (cpu, memory) under ";
  for (size_t i = 0; i < hierarchies_.size(); ++i) out += (i ? ", " : "") + hierarchies_[i].dir;
  return out;
}

std::string WorkerCgroups::WorkerDir(const Hierarchy& h, const WorkerID& worker) const {
  return h.dir + "/worker-" + worker.Hex().substr(0, 12);
}

const WorkerCgroups::Hierarchy* WorkerCgroups::With(bool Hierarchy::*controller) const {
  for (const auto& h : hierarchies_) {
    if (h.*controller) return &h;
  }
  return nullptr;
}

absl::Status WorkerCgroups::Add(const WorkerID& worker, pid_t pid) {
  workers_.emplace(worker, CgroupLimits{});
  for (const auto& h : hierarchies_) {
    std::string dir = WorkerDir(h, worker);
    if (auto s = MakeDir(dir); !s.ok()) return s;
    if (auto s = WriteFile(dir + "/cgroup.procs", std::to_string(pid)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status WorkerCgroups::SetLimits(const WorkerID& worker, const CgroupLimits& limits) {
  auto it = workers_.find(worker);
  if (it == workers_.end()) return absl::NotFoundError("worker " + worker.Hex() + " has no cgroup");
  // A worker leased again for the same shape keeps its limits: no writes on that path.
  if (it->second.cpus == limits.cpus && it->second.memory_bytes == limits.memory_bytes) return absl::OkStatus();
  int64_t quota = limits.cpus > 0 ? std::max<int64_t>(1000, std::llround(limits.cpus * kCpuPeriodMicros)) : -1;
  absl::Status status;
  if (const Hierarchy* h = With(&Hierarchy::cpu)) {
    std::string dir = WorkerDir(*h, worker);
    if (version_ == 2) {
      status.Update(WriteFile(dir + "/cpu.max", (quota < 0 ? std::string("max") : std::to_string(quota)) + " " +
                                                    std::to_string(kCpuPeriodMicros)));
    } else {
      status.Update(WriteFile(dir + "/cpu.cfs_period_us", std::to_string(kCpuPeriodMicros)));
      status.Update(WriteFile(dir + "/cpu.cfs_quota_us", std::to_string(quota)));
    }
  }
  if (const Hierarchy* h = With(&Hierarchy::memory)) {
    std::string dir = WorkerDir(*h, worker);
    std::string bytes = limits.memory_bytes > 0 ? std::to_string(limits.memory_bytes) : "";
    if (version_ == 2) {
      status.Update(WriteFile(dir + "/memory.max", bytes.empty() ? "max" : bytes));
      // Past its limit a worker is killed, not swapped out.
      if (fs::exists(dir + "/memory.swap.max")) status.Update(WriteFile(dir + "/memory.swap.max", bytes.empty() ? "max" : "0"));
    } else {
      status.Update(WriteFile(dir + "/memory.limit_in_bytes", bytes.empty() ? "-1" : bytes));
    }
  }
  if (status.ok()) it->second = limits;
  return status;
}

CgroupLimits WorkerCgroups::LimitsOf(const WorkerID& worker) const {
  auto it = workers_.find(worker);
  return it == workers_.end() ? CgroupLimits{} : it->second;
}

absl::StatusOr<CgroupUsage> WorkerCgroups::Usage(const WorkerID& worker) const {
  if (!workers_.count(worker)) return absl::NotFoundError("worker " + worker.Hex() + " has no cgroup");
  CgroupUsage usage;
  if (version_ == 2) {
    std::string dir = WorkerDir(hierarchies_[0], worker);
    usage.cpu_seconds = static_cast<double>(ReadKeyed(dir + "/cpu.stat", "usage_usec")) / 1e6;
    usage.memory_bytes = ReadNumber(dir + "/memory.current");
    usage.oom_kills = ReadKeyed(dir + "/memory.events", "oom_kill");
    return usage;
  }
  if (const Hierarchy* h = With(&Hierarchy::cpuacct)) {
    usage.cpu_seconds = static_cast<double>(ReadNumber(WorkerDir(*h, worker) + "/cpuacct.usage")) / 1e9;
  }
  if (const Hierarchy* h = With(&Hierarchy::memory)) {
    std::string dir = WorkerDir(*h, worker);
    usage.memory_bytes = ReadNumber(dir + "/memory.usage_in_bytes");
    usage.oom_kills = ReadKeyed(dir + "/memory.oom_control", "oom_kill");
  }
  return usage;
}

void WorkerCgroups::Remove(const WorkerID& worker) {
  if (!workers_.erase(worker)) return;
  for (const auto& h : hierarchies_) {
    std::string dir = WorkerDir(h, worker);
    // Processes the worker started and left behind keep it; they are gone by shutdown.
    if (!RemoveDir(dir, std::chrono::milliseconds(0))) spdlog::debug("cgroup {} stays: {}", dir, ErrnoText(errno));
  }
}

}  // namespace orb

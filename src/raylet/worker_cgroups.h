// Each worker of a node in a cgroup of its own, under the raylet's, so that what a lease
// asked for is what its worker gets: `cpu.max` (v2) or the CFS quota (v1) from its CPU
// request, `memory.max` / `memory.limit_in_bytes` from its `memory` request.
//
// Layout: <the raylet's cgroup>/orb-<node>/worker-<id>, in the unified hierarchy (v2) or
// in each of the cpu, cpuacct and memory hierarchies (v1; a v1/v2 hybrid mounts its
// controllers as v1). A worker is placed when it starts and its limits are set each time
// it is leased; its cgroup is read for use (CPU time, memory, OOM kills by its own limit)
// and removed once the worker has been reaped.
//
// On v2 a cgroup that holds processes cannot hand controllers to its children: when the
// raylet's cgroup holds processes, they move to a leaf beside orb-<node> first (as a
// container's init does), so that the controllers can be enabled.
//
// Not thread-safe (the raylet's loop owns it).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "common/id.h"

namespace orb {

struct CgroupLimits {
  double cpus = 0;            // CPUs of time per second; 0: no limit
  uint64_t memory_bytes = 0;  // 0: no limit
};

struct CgroupUsage {
  double cpu_seconds = 0;     // CPU time its processes used
  uint64_t memory_bytes = 0;  // memory they use now
  uint64_t oom_kills = 0;     // processes the kernel killed for the cgroup's memory limit
};

// Where the cgroup file systems are, and which cgroups this process is in (tests point
// these at a directory tree of their own).
struct CgroupPaths {
  std::string mount_root = "/sys/fs/cgroup";
  std::string self_cgroup = "/proc/self/cgroup";
};

class WorkerCgroups {
 public:
  // Creates orb-<name> under the raylet's cgroup(s). FailedPrecondition naming why when
  // this host gives no usable cgroups (none mounted, no cpu or memory controller, no
  // permission to create one).
  static absl::StatusOr<std::unique_ptr<WorkerCgroups>> Create(const std::string& name, CgroupPaths paths = {});
  // Removes the cgroups it made (those still holding processes stay).
  ~WorkerCgroups();

  int version() const { return version_; }
  // "cgroup v1 (cpu, memory) under /sys/fs/cgroup/memory/x/orb-1a2b3c4d".
  std::string Describe() const;

  // Moves `pid` into the worker's cgroup (made now).
  absl::Status Add(const WorkerID& worker, pid_t pid);
  // Sets (or lifts, with zeros) the worker's limits.
  absl::Status SetLimits(const WorkerID& worker, const CgroupLimits& limits);
  // The limits set last (zeros when none or unknown worker).
  CgroupLimits LimitsOf(const WorkerID& worker) const;
  // NotFound for a worker never added.
  absl::StatusOr<CgroupUsage> Usage(const WorkerID& worker) const;
  // Removes the worker's cgroup (after its processes ended).
  void Remove(const WorkerID& worker);

  static constexpr uint64_t kCpuPeriodMicros = 100000;

 private:
  // One mounted hierarchy: its orb-<name> directory and the controllers it carries.
  struct Hierarchy {
    std::string dir;
    bool cpu = false;
    bool cpuacct = false;
    bool memory = false;
  };
  WorkerCgroups(int version, std::vector<Hierarchy> hierarchies)
      : version_(version), hierarchies_(std::move(hierarchies)) {}
  static absl::StatusOr<std::unique_ptr<WorkerCgroups>> CreateV1(const std::string& name, const CgroupPaths& paths);
  static absl::StatusOr<std::unique_ptr<WorkerCgroups>> CreateV2(const std::string& name, const CgroupPaths& paths,
                                                                 const std::string& self);
  std::string WorkerDir(const Hierarchy& h, const WorkerID& worker) const;
  const Hierarchy* With(bool Hierarchy::*controller) const;

  int version_;
  std::vector<Hierarchy> hierarchies_;
  std::unordered_map<WorkerID, CgroupLimits> workers_;
};

}  // namespace orb

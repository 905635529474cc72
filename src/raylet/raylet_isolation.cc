// How the raylet isolates its workers: cgroups with the lease's CPU and memory, the
// memory monitor, MPS shares for fractional GPUs.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "raylet/raylet.h"

namespace orb {
namespace {

// A process's resident set, from /proc (when its worker has no cgroup to ask).
uint64_t ResidentBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

absl::Status Raylet::SetUpIsolation() {
  const std::string& mode = options_.worker_cgroups;
  if (mode != "auto" && mode != "on" && mode != "off") {
    return absl::InvalidArgumentError("--worker-cgroups must be auto, on or off, not '" + mode + "'");
  }
  if (mode == "off") {
    isolation_ = "off (--worker-cgroups=off)";
    return absl::OkStatus();
  }
  auto cgroups = WorkerCgroups::Create(node_id_.Hex().substr(0, 8));
  if (!cgroups.ok()) {
    if (mode == "on") return absl::FailedPreconditionError("--worker-cgroups=on: " + std::string(cgroups.status().message()));
    isolation_ = "off: " + std::string(cgroups.status().message());
    spdlog::warn("workers run without cgroup limits: {}", std::string(cgroups.status().message()));
    return absl::OkStatus();
  }
  cgroups_ = std::move(*cgroups);
  isolation_ = cgroups_->Describe();
  spdlog::info("workers run in cgroups with their leases' limits: {}", isolation_);
  return absl::OkStatus();
}

void Raylet::LimitWorker(const WorkerProcess& worker, const ResourceSet& resources) {
  if (!cgroups_) return;
  CgroupLimits limits{resources.Get("CPU"), static_cast<uint64_t>(std::max(0.0, resources.Get("memory")))};
  if (auto s = cgroups_->SetLimits(worker.id, limits); !s.ok()) {
    spdlog::warn("worker {} runs without its limits ({}): {}", worker.id.Hex(), resources.ToString(), s.ToString());
  }
}

void Raylet::StartMemoryMonitor() {
  if (!options_.memory_monitor.enabled()) return;
  memory_monitor_ = std::make_unique<MemoryMonitor>(
      options_.memory_monitor, node_id_.Hex().substr(0, 12), [] { return ReadMemoryUse(); },
      [this] { return OomCandidates(); },
      [this](const OomCandidate& victim, const std::string& why) { worker_pool_->KillForMemory(victim.worker, why); });
  loop_.RunEvery(options_.memory_monitor.interval, [this] {
    memory_monitor_->Check();
    return !stopping_;
  });
}

std::vector<OomCandidate> Raylet::OomCandidates() const {
  std::vector<OomCandidate> out;
  for (const LeaseSummary& lease : lease_granter_->Leases()) {
    const WorkerProcess* worker = worker_pool_->Find(lease.worker);
    if (!worker || worker->is_driver || worker->pid <= 0) continue;
    OomCandidate c{lease.worker, worker->pid, lease.retriable, lease.granted_at};
    auto usage = cgroups_ ? cgroups_->Usage(lease.worker) : absl::StatusOr<CgroupUsage>(absl::NotFoundError(""));
    c.memory_bytes = usage.ok() ? usage->memory_bytes : ResidentBytes(worker->pid);
    out.push_back(c);
  }
  return out;
}

bool Raylet::UseMps() const {
  if (options_.gpu_mps == "on") return true;
  if (options_.gpu_mps == "off") return false;
  const char* pipe = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  std::error_code ec;
  return std::filesystem::exists(std::string(pipe && *pipe ? pipe : "/tmp/nvidia-mps") + "/control", ec);
}

}  // namespace orb

// The node's worker processes: starting them per job, handing out idle ones, noticing
// deaths, and stopping workers that stay idle too long.
//
// A worker is started as the job's own executable (or the default worker when the job
// loads its code from code_search_path) with `--orb-worker-mode` and its identity in
// the environment, then registers over RPC with its port. Runs on the raylet's event
// loop; not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <unordered_set>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "common/id.h"
#include "gcs_service.pb.h"

namespace orb {

struct WorkerPoolOptions {
  std::string node_id_hex;
  std::string raylet_address;
  std::string node_ip;  // workers serve and advertise on it
  std::string gcs_address;
  std::string session_dir;
  std::string token;
  std::string default_worker_path;  // runs jobs that set code_search_path
  std::chrono::milliseconds idle_timeout{60000};
  // At most this many workers start at once (starting is CPU-heavy on a small node).
  int max_starting = 4;
};

struct WorkerProcess {
  enum class State { kStarting, kIdle, kLeased };
  WorkerID id;
  JobID job;
  std::string runtime_env;  // the environment it was started in; it serves only that
  pid_t pid = 0;
  int port = 0;
  std::string unix_socket;
  bool is_driver = false;
  // Leased by the GCS for an actor: the GCS decides when it goes (a detached actor
  // outlives its job's driver), not the driver's exit.
  bool held_by_gcs = false;
  State state = State::kStarting;
  std::chrono::steady_clock::time_point idle_since;
};

class WorkerPool {
 public:
  using DeathCallback = std::function<void(const WorkerProcess&)>;
  WorkerPool(WorkerPoolOptions options, DeathCallback on_death);

  // Starts a worker for `job` in `runtime_env` (canonical JSON, see
  // common/runtime_env_spec.h). InvalidArgument when the job has no way to run workers;
  // FailedPrecondition, naming the cause, when the environment cannot be set up.
  absl::Status StartWorker(const rpc::JobInfo& job, const std::string& runtime_env = "");
  // A started worker (or a driver) reports its port. NotFound for an unknown worker ID.
  absl::Status Register(const WorkerID& id, const JobID& job, pid_t pid, int port, const std::string& unix_socket,
                        bool is_driver);
  void Disconnect(const WorkerID& id);

  // An idle worker of `job` in `runtime_env`, now marked leased; null when there is none.
  WorkerProcess* PopIdle(const JobID& job, const std::string& runtime_env = "");
  void PushIdle(const WorkerID& id);
  void Kill(const WorkerID& id);
  // Reaps exited children and forgets dead drivers, calling on_death for each.
  void ReapDead();
  // Stops idle workers past the idle timeout.
  void StopIdleWorkers();
  void KillAll();
  // Kills the idle workers of a finished job (not those the GCS holds for actors).
  void StopWorkersOf(const JobID& job);

  int NumStarting(const JobID& job, const std::string& runtime_env = "") const;
  int NumStartingTotal() const;
  int max_starting() const { return options_.max_starting; }
  const WorkerProcess* Find(const WorkerID& id) const;
  // How a worker that ended did ("killed by signal 9 (SIGKILL)"...), while remembered.
  std::optional<std::string> ExitOf(const WorkerID& id) const;
  size_t num_workers() const;
  size_t num_idle() const;

 private:
  void HandleDeath(std::unordered_map<WorkerID, WorkerProcess>::iterator it);
  void RememberExit(const WorkerID& id, std::string how);

  WorkerPoolOptions options_;
  DeathCallback on_death_;
  std::unordered_map<WorkerID, WorkerProcess> workers_;
  // How recent workers ended, the oldest forgotten first.
  std::unordered_map<WorkerID, std::string> exits_;
  std::deque<WorkerID> exit_order_;
  std::unordered_set<WorkerID> killed_here_;  // killed by this raylet, not by themselves
};

}  // namespace orb

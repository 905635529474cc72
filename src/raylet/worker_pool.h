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
#include "raylet_service.pb.h"
#include "raylet/fork_servers.h"
#include "raylet/worker_cgroups.h"

namespace orb {

struct WorkerProcess;

struct WorkerPoolOptions {
  std::string node_id_hex;
  std::string raylet_address;
  std::string node_ip;  // workers serve and advertise on it
  std::string gcs_address;
  std::string session_dir;
  std::string token;
  std::string default_worker_path;  // runs jobs that set code_search_path
  // Runs Python workers of jobs that name no interpreter; `python_path` is put on their
  // module search path (where the orb package is, when it is not installed).
  std::string python_executable = "python3";
  std::vector<std::string> python_path;
  std::chrono::milliseconds idle_timeout{60000};
  // Asks a worker idle past `idle_timeout` to exit; `answer` (called on the pool's
  // thread, never from within this call) says true when it exits by itself, false when
  // it stays because objects it owns are still in use (it is asked again after another
  // timeout), or an error when it could not be asked (it is stopped with SIGTERM).
  // Null: idle workers are stopped with SIGTERM at once.
  using ExitAnswer = std::function<void(absl::StatusOr<bool>)>;
  std::function<void(const WorkerProcess&, ExitAnswer)> ask_to_exit;
  // At most this many workers start at once (starting is CPU-heavy on a small node).
  int max_starting = 4;
  // Each worker goes into a cgroup of its own here (null: workers are not isolated).
  WorkerCgroups* cgroups = nullptr;
  // C++ workers are forked from these when one is up (null: always started anew).
  ForkServers* fork_servers = nullptr;
};

// How a worker ended, as its tasks' errors tell it.
struct WorkerExit {
  std::string how;  // "killed by signal 9 (SIGKILL)", "exited with status 3", why it was killed for memory
  rpc::ErrorType type = rpc::WORKER_CRASHED;  // OUT_OF_MEMORY when killed for memory
};

// What a worker serves besides its job: tasks that need the same runtime environment
// and are written in the same language.
struct WorkerKind {
  std::string runtime_env;  // canonical JSON (common/runtime_env_spec.h); empty: none
  rpc::Language language = rpc::CPP;
  bool operator==(const WorkerKind& o) const { return runtime_env == o.runtime_env && language == o.language; }
  bool operator!=(const WorkerKind& o) const { return !(*this == o); }
  // A key that tells kinds apart.
  std::string Key() const { return std::to_string(language) + "|" + runtime_env; }
};

struct WorkerProcess {
  enum class State { kStarting, kIdle, kLeased };
  WorkerID id;
  JobID job;
  WorkerKind kind;  // how it was started; it serves only tasks of that kind
  pid_t pid = 0;
  int port = 0;
  std::string unix_socket;
  std::string call_socket;  // its call stream, when it serves one
  int call_port = 0;
  bool is_driver = false;
  // Leased by the GCS for an actor: the GCS decides when it goes (a detached actor
  // outlives its job's driver), not the driver's exit.
  bool held_by_gcs = false;
  // It ran tasks: it may own their objects, so it never hosts an actor (whose end would
  // take them with it), as in Ray, where an actor's worker is a fresh one.
  bool ran_tasks = false;
  // Asked to exit for idling (StopIdleWorkers): not handed out until it answers.
  bool exit_asked = false;
  State state = State::kStarting;
  std::chrono::steady_clock::time_point idle_since;
  int64_t start_time_ms = 0;  // Unix ms
  std::string log_file;       // its stdout and stderr (empty: a driver's own)
};

// What the LeaseGranter needs of a node's workers: idle ones to lease, new ones to start,
// and ends for those it no longer wants. WorkerPool is the real one; tests use fakes.
class WorkerSupply {
 public:
  virtual ~WorkerSupply() = default;
  virtual absl::Status StartWorker(const rpc::JobInfo& job, const WorkerKind& kind) = 0;
  // An idle worker of `job` and `kind` (for an actor: one that never ran tasks), leased.
  virtual WorkerProcess* PopIdle(const JobID& job, const WorkerKind& kind, bool for_actor) = 0;
  virtual void PushIdle(const WorkerID& id) = 0;
  virtual void Kill(const WorkerID& id) = 0;
  // The worker ends by itself (max_calls): it is never handed out again.
  virtual void Retire(const WorkerID& id) = 0;
  virtual void StopWorkersOf(const JobID& job) = 0;
  virtual int NumStarting(const JobID& job, const WorkerKind& kind) const = 0;
  virtual int NumStartingTotal() const = 0;
  virtual int max_starting() const = 0;
  virtual const WorkerProcess* Find(const WorkerID& id) const = 0;
};

class WorkerPool : public WorkerSupply {
 public:
  using DeathCallback = std::function<void(const WorkerProcess&)>;
  WorkerPool(WorkerPoolOptions options, DeathCallback on_death);

  // Starts a worker of `kind` for `job`: the job's executable (C++) or a Python
  // interpreter running orb._worker. InvalidArgument when the job has no way to run
  // workers; FailedPrecondition, naming the cause, when the environment cannot be set up.
  absl::Status StartWorker(const rpc::JobInfo& job, const WorkerKind& kind = {}) override;
  // A started worker (or a driver) reports its port. NotFound for an unknown worker ID.
  absl::Status Register(const rpc::RegisterWorkerRequest& request);
  void Disconnect(const WorkerID& id);

  // An idle worker of `job` and `kind`, now marked leased; null when there is none.
  WorkerProcess* PopIdle(const JobID& job, const WorkerKind& kind = {}, bool for_actor = false) override;
  void PushIdle(const WorkerID& id) override;
  void Kill(const WorkerID& id) override;
  void Retire(const WorkerID& id) override;
  // Kills a worker to free the node's memory; its exit reads `why`, as OUT_OF_MEMORY.
  void KillForMemory(const WorkerID& id, const std::string& why);
  // Reaps exited children and forgets dead drivers, calling on_death for each.
  void ReapDead();
  // Asks the workers idle past the idle timeout to exit (stops them, without ask_to_exit).
  void StopIdleWorkers();
  void KillAll();
  // Kills the idle workers of a finished job (not those the GCS holds for actors).
  void StopWorkersOf(const JobID& job) override;

  int NumStarting(const JobID& job, const WorkerKind& kind = {}) const override;
  int NumStartingTotal() const override;
  int max_starting() const override { return options_.max_starting; }
  const WorkerProcess* Find(const WorkerID& id) const override;
  // How a worker that ended did ("killed by signal 9 (SIGKILL)"...), while remembered.
  std::optional<WorkerExit> ExitOf(const WorkerID& id) const;
  size_t num_workers() const;
  size_t num_idle() const;
  // The drivers and workers that registered (have a port), in no particular order.
  std::vector<WorkerProcess> Registered() const;
  // Every worker and driver, starting ones included.
  std::vector<WorkerProcess> All() const;

 private:
  void HandleDeath(std::unordered_map<WorkerID, WorkerProcess>::iterator it);
  // A worker asked to exit for idling answered (see WorkerPoolOptions::ask_to_exit).
  void OnExitAnswer(const WorkerID& id, const absl::StatusOr<bool>& answer);
  void RememberExit(const WorkerID& id, WorkerExit exit);
  // How the worker that exited with wait `status` ended, its own memory limit considered.
  WorkerExit ClassifyExit(const WorkerProcess& worker, int status);

  WorkerPoolOptions options_;
  DeathCallback on_death_;
  std::unordered_map<WorkerID, WorkerProcess> workers_;
  // How recent workers ended, the oldest forgotten first.
  std::unordered_map<WorkerID, WorkerExit> exits_;
  std::deque<WorkerID> exit_order_;
  std::unordered_set<WorkerID> killed_here_;  // killed by this raylet, not by themselves
  std::unordered_map<WorkerID, std::string> killed_for_memory_;  // and why
};

}  // namespace orb

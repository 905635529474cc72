#include "raylet/worker_pool.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "common/process.h"
#include "common/runtime_env_spec.h"
#include "common/unix_time.h"

namespace orb {

WorkerPool::WorkerPool(WorkerPoolOptions options, DeathCallback on_death)
    : options_(std::move(options)), on_death_(std::move(on_death)) {}

namespace {

// The fork servers of a job: their keys all start with it.
std::string ForkServerKey(const JobID& job) { return job.Hex() + "|"; }

std::string JoinPath(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (p.empty()) continue;
    out += (out.empty() ? "" : ":") + p;
  }
  return out;
}
}  // namespace

absl::Status WorkerPool::StartWorker(const rpc::JobInfo& job, const WorkerKind& kind) {
  JobID job_id = JobID::FromBinary(job.job_id());
  const std::string& runtime_env = kind.runtime_env;
  auto env = ParseRuntimeEnv(runtime_env);
  if (!env.ok()) return absl::FailedPreconditionError(env.status().message());
  ProcessOptions process;
  if (!env->working_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(env->working_dir, ec)) {
      return absl::FailedPreconditionError("working_dir " + env->working_dir + " is not a directory here");
    }
    process.working_dir = env->working_dir;
  }
  std::vector<std::string> job_code_path(job.code_search_path().begin(), job.code_search_path().end());
  std::string code_path = JoinPath(job_code_path);
  // Loaded (C++) or searched for modules (Python) by whichever worker runs.
  std::string env_code_path = JoinPath(env->code_search_path);
  WorkerID id = WorkerID::FromRandom();
  if (kind.language == rpc::PYTHON) {
    // The job's own module path first, then the code search paths (a C++ job's Python
    // code), then where this raylet's orb package is.
    std::vector<std::string> path(job.python_path().begin(), job.python_path().end());
    path.insert(path.end(), job_code_path.begin(), job_code_path.end());
    path.insert(path.end(), env->code_search_path.begin(), env->code_search_path.end());
    path.insert(path.end(), options_.python_path.begin(), options_.python_path.end());
    const char* inherited = std::getenv("PYTHONPATH");
    if (inherited && *inherited) path.push_back(inherited);
    std::string python = job.python_executable().empty() ? options_.python_executable : job.python_executable();
    process.argv = {python, "-m", "orb._worker"};
    process.env["PYTHONPATH"] = JoinPath(path);
    process.env["PYTHONUNBUFFERED"] = "1";  // prints reach the log as they happen
  } else {
    std::string executable = job.worker_executable();
    if (!code_path.empty() || executable.empty()) executable = options_.default_worker_path;
    if (executable.empty()) {
      return absl::InvalidArgumentError("job " + job_id.Hex() + " names no worker executable and no code_search_path");
    }
    process.argv = {executable, "--orb-worker-mode"};
  }
  std::map<std::string, std::string> orb_env = {
{"ORB_WORKER_MODE", "1"},
                 {"ORB_WORKER_ID", id.Hex()},
                 {"ORB_JOB_ID", job_id.Hex()},
                 {"ORB_NODE_ID", options_.node_id_hex},
                 {"ORB_RAYLET_ADDRESS", options_.raylet_address},
                 {"ORB_NODE_IP", options_.node_ip},
                 {"ORB_GCS_ADDRESS", options_.gcs_address},
                 {"ORB_SESSION_DIR", options_.session_dir},
                 {"ORB_TOKEN", options_.token},
                 {"ORB_NAMESPACE", job.namespace_()},
                 {"ORB_DEFAULT_ACTOR_LIFETIME", job.detached_actors_by_default() ? "detached" : "non_detached"},
                 {"ORB_CODE_SEARCH_PATH", code_path + (code_path.empty() || env_code_path.empty() ? "" : ":") +
                                              env_code_path},
                 {"ORB_RUNTIME_ENV", runtime_env}};
  process.env.insert(orb_env.begin(), orb_env.end());
  for (const auto& [name, value] : env->env_vars) {
    if (name == "PYTHONPATH" && process.env.count(name)) {  // the user's directories first
      process.env[name] = value + ":" + process.env[name];
      continue;
    }
    if (process.env.count(name)) return absl::FailedPreconditionError("env_vars may not set " + name + " (orb's own)");
    process.env[name] = value;
  }
  if (!options_.session_dir.empty()) {
    process.output_path = options_.session_dir + "/logs/worker-" + id.Hex().substr(0, 12) + ".log";
  }
  process.die_with_parent = true;
  std::optional<pid_t> forked;
  if (kind.language == rpc::CPP && options_.fork_servers) {
    forked = options_.fork_servers->Fork(ForkServerKey(job_id) + process.argv[0] + "|" + runtime_env, process);
  }
  auto pid = forked ? absl::StatusOr<pid_t>(*forked) : SpawnProcess(process);
  if (!pid.ok()) return pid.status();
  if (options_.cgroups) {
    if (auto s = options_.cgroups->Add(id, *pid); !s.ok()) spdlog::warn("worker {} runs outside its cgroup: {}", id.Hex(), s.ToString());
  }
  // Should the kernel's OOM killer act before the memory monitor, a worker goes first,
  // not the raylet (as Ray's worker_oom_score_adjustment).
  std::ofstream(std::string("/proc/") + std::to_string(*pid) + "/oom_score_adj") << "1000";
  WorkerProcess& w = workers_[id];
  w.id = id;
  w.job = job_id;
  w.kind = kind;
  w.pid = *pid;
  w.start_time_ms = UnixMillis();
  w.log_file = process.output_path;
  spdlog::debug("started worker {} pid {} for job {} [worker_id={} job_id={}]", id.Hex(), *pid, job_id.Hex(), id.Hex(),
                job_id.Hex());
  return absl::OkStatus();
}

absl::Status WorkerPool::Register(const rpc::RegisterWorkerRequest& request) {
  WorkerID id = WorkerID::FromBinary(request.worker_id());
  auto it = workers_.find(id);
  if (it == workers_.end()) {
    if (!request.is_driver()) return absl::NotFoundError("worker " + id.Hex() + " was not started by this raylet");
    WorkerProcess& d = workers_[id];
    d.id = id;
    d.job = JobID::FromBinary(request.job_id());
    d.pid = request.pid();
    d.port = request.port();
    d.is_driver = true;
    d.start_time_ms = UnixMillis();
    d.state = WorkerProcess::State::kLeased;  // never handed out
    return absl::OkStatus();
  }
  it->second.port = request.port();
  it->second.unix_socket = request.unix_socket();
  it->second.call_socket = request.call_socket();
  it->second.call_port = request.call_port();
  it->second.state = WorkerProcess::State::kIdle;
  it->second.idle_since = std::chrono::steady_clock::now();
  return absl::OkStatus();
}

void WorkerPool::Disconnect(const WorkerID& id) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return;
  if (it->second.is_driver) {
    HandleDeath(it);
  } else {
    Kill(id);
  }
}

WorkerProcess* WorkerPool::PopIdle(const JobID& job, const WorkerKind& kind, bool for_actor) {
  WorkerProcess* best = nullptr;
  for (auto& [id, w] : workers_) {
    if (w.job != job || w.kind != kind || w.state != WorkerProcess::State::kIdle || w.exit_asked) continue;
    if (for_actor && w.ran_tasks) continue;
    // The most recently idle worker is warmest (its caches, its pages).
    if (!best || w.idle_since > best->idle_since) best = &w;
  }
  if (best) best->state = WorkerProcess::State::kLeased;
  return best;
}

void WorkerPool::PushIdle(const WorkerID& id) {
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.is_driver) return;
  it->second.state = WorkerProcess::State::kIdle;
  it->second.held_by_gcs = false;
  it->second.idle_since = std::chrono::steady_clock::now();
}

void WorkerPool::Kill(const WorkerID& id) {
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.is_driver) return;
  killed_here_.insert(id);
  ::kill(it->second.pid, SIGKILL);
  // ReapDead() collects it and reports the death.
}

void WorkerPool::Retire(const WorkerID& id) {
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.is_driver) return;
  it->second.state = WorkerProcess::State::kLeased;  // never handed out again; ReapDead sees it end
}

void WorkerPool::KillForMemory(const WorkerID& id, const std::string& why) {
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.is_driver) return;
  killed_for_memory_[id] = why;
  ::kill(it->second.pid, SIGKILL);
}

void WorkerPool::StopWorkersOf(const JobID& job) {
  for (auto& [id, w] : workers_) {
    if (w.job == job && !w.is_driver && !w.held_by_gcs && w.state != WorkerProcess::State::kLeased) {
      ::kill(w.pid, SIGKILL);
    }
  }
  if (options_.fork_servers) options_.fork_servers->Stop(ForkServerKey(job));
}

void WorkerPool::HandleDeath(std::unordered_map<WorkerID, WorkerProcess>::iterator it) {
  WorkerProcess dead = it->second;
  workers_.erase(it);
  // A killed process leaves its sockets behind.
  if (!dead.unix_socket.empty()) ::unlink(dead.unix_socket.c_str());
  if (!dead.call_socket.empty()) ::unlink(dead.call_socket.c_str());
  if (dead.is_driver) {
    // The job is over: its workers have nothing left to do.
    for (auto& [id, w] : workers_) {
      if (w.job == dead.job && !w.is_driver && !w.held_by_gcs) ::kill(w.pid, SIGKILL);
    }
    if (options_.fork_servers) options_.fork_servers->Stop(ForkServerKey(dead.job));
  }
  on_death_(dead);
}

namespace {

// "killed by signal 9 (SIGKILL)", "exited with status 3": what a user reads.
std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = ::sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig) + (abbrev ? std::string(" (SIG") + abbrev + ")" : "");
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended (wait status " + std::to_string(status) + ")";
}

constexpr size_t kExitsRemembered = 1024;

}  // namespace

std::optional<WorkerExit> WorkerPool::ExitOf(const WorkerID& id) const {
  auto it = exits_.find(id);
  if (it == exits_.end()) return std::nullopt;
  return it->second;
}

void WorkerPool::RememberExit(const WorkerID& id, WorkerExit exit) {
  if (exits_.emplace(id, std::move(exit)).second) exit_order_.push_back(id);
  while (exit_order_.size() > kExitsRemembered) {
    exits_.erase(exit_order_.front());
    exit_order_.pop_front();
  }
}

WorkerExit WorkerPool::ClassifyExit(const WorkerProcess& worker, int status) {
  WorkerExit exit{DescribeExit(status)};
  bool stopped_here = killed_here_.erase(worker.id) > 0;
  if (auto memory = killed_for_memory_.find(worker.id); memory != killed_for_memory_.end()) {
    exit = {memory->second + " (" + exit.how + ")", rpc::OUT_OF_MEMORY};
    killed_for_memory_.erase(memory);
  } else if (stopped_here) {
    exit.how = "stopped by its raylet (" + exit.how + ")";
  }
  if (options_.cgroups) {
    auto usage = options_.cgroups->Usage(worker.id);
    CgroupLimits limits = options_.cgroups->LimitsOf(worker.id);
    if (usage.ok() && usage->oom_kills > 0 && exit.type != rpc::OUT_OF_MEMORY) {
      exit = {"killed for using more memory than its limit of " + std::to_string(limits.memory_bytes >> 20) +
                  " MiB (the `memory` its lease asked for) on node " + options_.node_id_hex.substr(0, 12) + " (" +
                  exit.how + ")",
              rpc::OUT_OF_MEMORY};
    }
    options_.cgroups->Remove(worker.id);
  }
  return exit;
}

void WorkerPool::ReapDead() {
  int status = 0;
  while (pid_t pid = ReapAnyChild(&status)) {
    for (auto it = workers_.begin(); it != workers_.end(); ++it) {
      if (it->second.pid == pid && !it->second.is_driver) {
        WorkerExit exit = ClassifyExit(it->second, status);
        spdlog::info("worker {} (pid {}) {} [worker_id={} job_id={}]", it->first.Hex(), pid, exit.how, it->first.Hex(),
                     it->second.job.Hex());
        RememberExit(it->first, std::move(exit));
        HandleDeath(it);
        break;
      }
    }
  }
  for (auto it = workers_.begin(); it != workers_.end();) {
    auto next = std::next(it);
    if (it->second.is_driver && ::kill(it->second.pid, 0) != 0) HandleDeath(it);
    it = next;
  }
}

void WorkerPool::StopIdleWorkers() {
  auto now = std::chrono::steady_clock::now();
  for (auto& [id, w] : workers_) {
    if (w.state != WorkerProcess::State::kIdle || w.exit_asked || now - w.idle_since <= options_.idle_timeout) continue;
    if (!options_.ask_to_exit) {
      ::kill(w.pid, SIGTERM);
      w.state = WorkerProcess::State::kLeased;  // never handed out again
      continue;
    }
    // It may own objects still in use (results of tasks it submitted, objects it put):
    // they would be lost with it, so it decides.
    w.exit_asked = true;
    options_.ask_to_exit(w, [this, id = id](const absl::StatusOr<bool>& answer) { OnExitAnswer(id, answer); });
  }
}

void WorkerPool::OnExitAnswer(const WorkerID& id, const absl::StatusOr<bool>& answer) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return;  // it ended meanwhile
  WorkerProcess& w = it->second;
  if (answer.ok() && !*answer) {
    w.exit_asked = false;  // it stays, idle, and is asked again after another timeout
    w.idle_since = std::chrono::steady_clock::now();
    return;
  }
  if (!answer.ok()) {
    spdlog::info("worker {} did not answer the request to exit ({}): stopping it", id.Hex(),
                 answer.status().ToString());
    ::kill(w.pid, SIGTERM);
  }
  w.state = WorkerProcess::State::kLeased;  // never handed out again; ReapDead sees it go
}

void WorkerPool::KillAll() {
  for (auto& [id, w] : workers_) {
    if (!w.is_driver) ::kill(w.pid, SIGKILL);
  }
  for (auto& [id, w] : workers_) {
    if (!w.is_driver) ::waitpid(w.pid, nullptr, 0);
  }
  workers_.clear();
}

int WorkerPool::NumStarting(const JobID& job, const WorkerKind& kind) const {
  int n = 0;
  for (const auto& [id, w] : workers_) {
    n += (w.job == job && w.kind == kind && w.state == WorkerProcess::State::kStarting);
  }
  return n;
}

int WorkerPool::NumStartingTotal() const {
  int n = 0;
  for (const auto& [id, w] : workers_) n += (w.state == WorkerProcess::State::kStarting);
  return n;
}

const WorkerProcess* WorkerPool::Find(const WorkerID& id) const {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

size_t WorkerPool::num_workers() const {
  size_t n = 0;
  for (const auto& [id, w] : workers_) n += !w.is_driver;
  return n;
}

size_t WorkerPool::num_idle() const {
  size_t n = 0;
  for (const auto& [id, w] : workers_) n += (w.state == WorkerProcess::State::kIdle);
  return n;
}

std::vector<WorkerProcess> WorkerPool::All() const {
  std::vector<WorkerProcess> out;
  for (const auto& [id, w] : workers_) out.push_back(w);
  return out;
}

std::vector<WorkerProcess> WorkerPool::Registered() const {
  std::vector<WorkerProcess> out;
  for (const auto& [id, w] : workers_) {
    if (w.port > 0) out.push_back(w);
  }
  return out;
}

}  // namespace orb

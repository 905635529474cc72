#include "common/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace orb {
namespace {

// PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the process:
// a child that must die with this process is forked by one thread that lives as long as
// the process does, whichever thread asks (a program's first call from a short-lived
// thread may start its cluster).
class ForkThread {
 public:
  static ForkThread& Instance() {
    static ForkThread* thread = new ForkThread();  // never destroyed: it lives with the process
    return *thread;
  }
  static bool IsCurrent() { return on_it_; }

  absl::StatusOr<pid_t> Run(const std::function<absl::StatusOr<pid_t>()>& spawn) {
    std::packaged_task<absl::StatusOr<pid_t>()> task(spawn);
    auto result = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back([&task] { task(); });
    }
    cv_.notify_one();
    return result.get();
  }

 private:
  ForkThread() {
    std::thread([this] {
      on_it_ = true;
      while (true) {
        std::function<void()> job;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [this] { return !jobs_.empty(); });
          job = std::move(jobs_.front());
          jobs_.pop_front();
        }
        job();
      }
    }).detach();
  }

  static thread_local bool on_it_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
};
thread_local bool ForkThread::on_it_ = false;

}  // namespace

absl::StatusOr<pid_t> SpawnProcess(const ProcessOptions& options) {
  if (options.die_with_parent && !ForkThread::IsCurrent()) {
    return ForkThread::Instance().Run([&options] { return SpawnProcess(options); });
  }
  if (options.argv.empty()) return absl::InvalidArgumentError("no executable given");
  if (::access(options.argv[0].c_str(), X_OK) != 0) {
    return absl::NotFoundError("cannot execute " + options.argv[0] + ": " + std::strerror(errno));
  }
  // Build everything before fork: only async-signal-safe calls are allowed in the child.
  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos && options.env.count(entry.substr(0, eq))) continue;
    env_strings.push_back(entry);
  }
  for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  int out_fd = -1;
  if (!options.output_path.empty()) {
    out_fd = ::open(options.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd < 0) return absl::PermissionDeniedError("cannot open log " + options.output_path);
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    if (out_fd >= 0) ::close(out_fd);
    return absl::ResourceExhaustedError(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    if (options.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
    }
    if (options.new_process_group) ::setsid();
    if (out_fd >= 0) {
      ::dup2(out_fd, STDOUT_FILENO);
      ::dup2(out_fd, STDERR_FILENO);
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    if (!options.working_dir.empty() && ::chdir(options.working_dir.c_str()) != 0) _exit(126);
    ::execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  if (out_fd >= 0) ::close(out_fd);
  return pid;
}

bool IsProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  int status;
  pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == pid) return false;  // it was our child and has exited: now reaped
  return ::kill(pid, 0) == 0;
}

void StopProcess(pid_t pid, std::chrono::milliseconds grace) {
  if (pid <= 0 || !IsProcessAlive(pid)) return;
  ::kill(pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!IsProcessAlive(pid)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  for (int i = 0; i < 200 && IsProcessAlive(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

pid_t ReapAnyChild(int* exit_status) {
  int status = 0;
  pid_t pid = ::waitpid(-1, &status, WNOHANG);
  if (pid <= 0) return 0;
  if (exit_status) *exit_status = status;
  return pid;
}

std::string SelfExecutablePath() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : path.string();
}

std::string SelfExecutableDir() {
  return std::filesystem::path(SelfExecutablePath()).parent_path().string();
}

}  // namespace orb

namespace orb {

static sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

void BlockTerminationSignals() {
  sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

int WaitForTerminationSignalFor(std::chrono::milliseconds timeout) {
  sigset_t set = TerminationSignals();
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  ts.tv_nsec = static_cast<long>((timeout.count() % 1000) * 1000000);
  int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

int WaitForTerminationSignal() {
  sigset_t set = TerminationSignals();
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

}  // namespace orb

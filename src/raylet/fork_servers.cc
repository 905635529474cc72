#include "raylet/fork_servers.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/fork_server_protocol.h"
#include "common/sockets.h"

namespace orb {

namespace {
// How long a new server has to start listening before it counts as failed.
constexpr std::chrono::seconds kStartGrace{20};
}  // namespace

ForkServers::ForkServers(std::string socket_dir, bool enabled)
    : socket_dir_(std::move(socket_dir)), enabled_(enabled) {}

ForkServers::~ForkServers() { Stop(""); }

bool ForkServers::MakeSubreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }

std::optional<pid_t> ForkServers::Fork(const std::string& key, const ProcessOptions& process) {
  if (!enabled_) return std::nullopt;
  auto it = servers_.find(key);
  if (it == servers_.end()) {
    Start(key, process);
    return std::nullopt;
  }
  Server& server = it->second;
  if (server.failed) return std::nullopt;
  if (server.fd < 0) {
    auto fd = ConnectNonBlocking("unix:" + server.socket_path);
    if (!fd.ok()) {
      if (std::chrono::steady_clock::now() - server.started > kStartGrace) Fail(server, std::string(fd.status().message()));
      return std::nullopt;  // not listening yet
    }
    server.fd = *fd;
    int flags = ::fcntl(server.fd, F_GETFL);
    ::fcntl(server.fd, F_SETFL, flags & ~O_NONBLOCK);
    timeval timeout{5, 0};
    ::setsockopt(server.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    ::setsockopt(server.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  }
  std::string body = process.output_path + '\0' + process.working_dir + '\0';
  for (const auto& [name, value] : process.env) body += name + "=" + value + '\0';
  uint32_t length = static_cast<uint32_t>(body.size());
  int32_t answer = 0;
  if (!WriteAll(server.fd, &length, sizeof(length)) || !WriteAll(server.fd, body.data(), body.size()) ||
      !ReadAll(server.fd, &answer, sizeof(answer))) {
    Fail(server, std::string("no answer: ") + std::strerror(errno));
    return std::nullopt;
  }
  if (answer <= 0) {
    Fail(server, std::string("fork failed: ") + std::strerror(-answer));
    return std::nullopt;
  }
  return static_cast<pid_t>(answer);
}

void ForkServers::Start(const std::string& key, const ProcessOptions& process) {
  Server& server = servers_[key];
  server.started = std::chrono::steady_clock::now();
  std::error_code ec;
  std::filesystem::create_directories(socket_dir_, ec);
  server.socket_path = socket_dir_ + "/fork-" + std::to_string(::getpid()) + "-" + std::to_string(next_++);
  ProcessOptions options = process;
  // ORB_WORKER_MODE stays: a program that checks it before orb::Init (as a test binary
  // that is also its worker does) takes the worker's path, into the fork server.
  options.env.erase("ORB_WORKER_ID");
  options.env[fork_server::kSocketEnv] = server.socket_path;
  // Every symbol bound now, once, rather than on first use in each worker.
  options.env["LD_BIND_NOW"] = "1";
  if (!options.output_path.empty()) {
    options.output_path = options.output_path.substr(0, options.output_path.rfind('/') + 1) + "fork-server-" +
                          std::to_string(next_ - 1) + ".log";
  }
  options.die_with_parent = true;
  auto pid = SpawnProcess(options);
  if (!pid.ok()) return Fail(server, std::string(pid.status().message()));
  server.pid = *pid;
  spdlog::debug("started fork server pid {} for {}", server.pid, key.substr(0, 40));
}

void ForkServers::Fail(Server& server, const std::string& why) {
  spdlog::warn("fork server {} failed ({}); workers start the usual way", server.socket_path, why);
  server.failed = true;
  if (server.fd >= 0) ::close(server.fd);
  server.fd = -1;
  if (server.pid > 0) ::kill(server.pid, SIGKILL);
}

void ForkServers::Stop(const std::string& prefix) {
  for (auto it = servers_.lower_bound(prefix); it != servers_.end() && it->first.rfind(prefix, 0) == 0;) {
    Server& server = it->second;
    if (server.fd >= 0) ::close(server.fd);
    if (server.pid > 0) {
      ::kill(server.pid, SIGKILL);
      ::waitpid(server.pid, nullptr, 0);
    }
    ::unlink(server.socket_path.c_str());
    it = servers_.erase(it);
  }
}

}  // namespace orb

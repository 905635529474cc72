#include "core/fork_server.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "common/fork_server_protocol.h"
#include "common/sockets.h"

namespace orb {
namespace {

struct Request {
  std::string output_path;
  std::string working_dir;
  std::vector<std::string> env;  // NAME=VALUE
};

bool ReadRequest(int fd, Request* request) {
  uint32_t length = 0;
  if (!ReadAll(fd, &length, sizeof(length)) || length > fork_server::kMaxRequestBytes) return false;
  std::string body(length, '\0');
  if (!ReadAll(fd, body.data(), length)) return false;
  std::vector<std::string> parts;
  for (size_t start = 0; start < body.size();) {
    size_t end = body.find('\0', start);
    if (end == std::string::npos) end = body.size();
    parts.push_back(body.substr(start, end - start));
    start = end + 1;
  }
  if (parts.size() < 2) return false;
  request->output_path = parts[0];
  request->working_dir = parts[1];
  request->env.assign(parts.begin() + 2, parts.end());
  return true;
}

void Answer(int fd, int32_t pid_or_error) { WriteAll(fd, &pid_or_error, sizeof(pid_or_error)); }

// In the new worker: becomes what the request asks for. False: it cannot run.
bool BecomeWorker(const Request& request, pid_t raylet) {
  // The worker is the raylet's child now (it is a subreaper): it dies with it, as a
  // worker the raylet starts itself does.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != raylet) return false;
  if (!request.output_path.empty()) {
    int out = ::open(request.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0) return false;
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    ::close(out);
  }
  if (!request.working_dir.empty() && ::chdir(request.working_dir.c_str()) != 0) return false;
  for (const std::string& entry : request.env) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    ::setenv(entry.substr(0, eq).c_str(), entry.substr(eq + 1).c_str(), 1);
  }
  ::unsetenv(fork_server::kSocketEnv);
  ::unsetenv("LD_BIND_NOW");  // the server's own start-up setting, not its workers' children's
  ::setenv(fork_server::kStartedByEnv, "fork_server", 1);
  return true;
}

size_t ThreadCount() {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec); !ec && it != decltype(it)(); ++it) ++n;
  return n;
}

}  // namespace

void RunForkServer(const std::string& socket_path) {
  // fork() copies only the calling thread: with others running (the program started
  // some before orb::Init), a child could inherit a lock held forever.
  if (size_t threads = ThreadCount(); threads != 1) {
    std::cerr << "orb fork server: not serving: this process already runs " << threads
              << " threads before orb::Init; the raylet starts each worker itself" << std::endl;
    std::_Exit(2);
  }
  auto listener = ListenUnix(socket_path, "fork server");
  if (!listener.ok()) {
    std::cerr << "orb fork server: " << listener.status().message() << std::endl;
    std::_Exit(2);
  }
  const pid_t raylet = ::getppid();
  while (true) {
    int connection = ::accept4(listener->fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      std::_Exit(2);
    }
    Request request;
    while (ReadRequest(connection, &request)) {
      pid_t child = ::fork();
      if (child < 0) {
        Answer(connection, -errno);
        continue;
      }
      if (child == 0) {
        // Forks again and exits, so that the worker is adopted by the raylet (a
        // subreaper), which reaps it and sees how it ended as for any worker it starts.
        const pid_t middle = ::getpid();
        pid_t worker = ::fork();
        if (worker != 0) {
          Answer(connection, worker > 0 ? worker : -errno);
          std::_Exit(0);
        }
        ::close(connection);
        ::close(listener->fd);
        while (::getppid() == middle) ::usleep(50);  // until the middle process is gone
        if (!BecomeWorker(request, raylet)) std::_Exit(126);
        return;  // on to run as the worker
      }
      ::waitpid(child, nullptr, 0);
    }
    ::close(connection);
  }
}

}  // namespace orb

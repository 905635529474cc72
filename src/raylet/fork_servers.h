// Starts C++ workers by forking them from a fork server (common/fork_server_protocol.h):
// one process of the worker executable per job and runtime environment, started with
// the first worker of its kind and with its libraries bound at once (LD_BIND_NOW), that
// forks each later worker. A fork costs about a millisecond where starting the
// executable costs tens (loading and linking its libraries, running static
// initializers), so new actors come up that much sooner.
//
// Workers forked this way are the raylet's children all the same (the raylet is a
// subreaper and the server forks twice): the raylet reaps them and reads how they
// ended as for any worker. Whenever a server is not up (yet), or fails, the worker is
// started the usual way; a server that fails is not asked again.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "common/process.h"

namespace orb {

class ForkServers {
 public:
  // `socket_dir`: where the servers' sockets go. Needs the calling process to be a
  // subreaper (see MakeSubreaper); disabled otherwise.
  explicit ForkServers(std::string socket_dir, bool enabled);
  ~ForkServers();
  ForkServers(const ForkServers&) = delete;
  ForkServers& operator=(const ForkServers&) = delete;

  // Makes this process adopt its descendants' orphans; false when it cannot.
  static bool MakeSubreaper();

  // The pid of the worker `process` describes, forked by the server of `key` (the job,
  // executable and runtime environment its kind shares); nullopt when that server is
  // not up: it is started (from `process`) when there is none, and the caller starts
  // this worker the usual way.
  std::optional<pid_t> Fork(const std::string& key, const ProcessOptions& process);
  // Stops the servers whose key starts with `prefix` (a job's, when it ends).
  void Stop(const std::string& prefix);

 private:
  struct Server {
    pid_t pid = 0;
    std::string socket_path;
    int fd = -1;  // the connection, once made
    bool failed = false;
    std::chrono::steady_clock::time_point started;
  };
  void Start(const std::string& key, const ProcessOptions& process);
  void Fail(Server& server, const std::string& why);

  const std::string socket_dir_;
  const bool enabled_;
  int next_ = 0;
  std::map<std::string, Server> servers_;
};

}  // namespace orb

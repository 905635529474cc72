// What the benchmarks share: one JSON line per figure, with the target it is held to
// and the limit it is measured against, and the limits themselves, measured in the
// same run on the same machine (a Unix socket round trip, a process spawn, memcpy).
//
//   {"metric": NAME, "value": X, "unit": U, "seconds": T, "target": Y,
//    "limit": Z, "limit_of": WHAT}
#pragma once

#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

struct Reference {
  double target = 0;     // 0: none
  double limit = 0;      // 0: none
  std::string limit_of;  // what the limit is
};

inline void Report(const std::string& metric, double value, const std::string& unit, double seconds,
                   const Reference& ref = {}) {
  std::cout << "{\"metric\": \"" << metric << "\", \"value\": " << value << ", \"unit\": \"" << unit
            << "\", \"seconds\": " << seconds;
  if (ref.target > 0) std::cout << ", \"target\": " << ref.target;
  if (ref.limit > 0) std::cout << ", \"limit\": " << ref.limit << ", \"limit_of\": \"" << ref.limit_of << "\"";
  std::cout << "}" << std::endl;
}

inline double Seconds(const std::function<void()>& body) {
  auto start = Clock::now();
  body();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A process's resident memory in KiB, without the shared object-store arena (RssShmem),
// which is not the process's own.
inline long RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  long anon = 0, file = 0;
  while (std::getline(in, line)) {
    if (line.rfind("RssAnon:", 0) == 0) anon = std::stol(line.substr(8));
    if (line.rfind("RssFile:", 0) == 0) file = std::stol(line.substr(8));
  }
  return anon + file;
}

// Runs `body` (which performs `ops` operations) and reports ops per second.
inline void Measure(const std::string& metric, const std::string& unit, double ops, const std::function<void()>& body,
                    const Reference& ref = {}) {
  double seconds = Seconds(body);
  Report(metric, ops / seconds, unit, seconds, ref);
}

// Round trips per second of 64-byte messages between this process and a child over a
// Unix socket pair: the floor under any blocking call between two processes.
inline double UnixSocketRoundTripsPerSecond(int trips = 20000) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 0;
  pid_t child = ::fork();
  char message[64] = {};
  if (child == 0) {
    ::close(fds[0]);
    while (::read(fds[1], message, sizeof(message)) == static_cast<ssize_t>(sizeof(message))) {
      if (::write(fds[1], message, sizeof(message)) != static_cast<ssize_t>(sizeof(message))) break;
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  auto start = Clock::now();
  for (int i = 0; i < trips; ++i) {
    if (::write(fds[0], message, sizeof(message)) != static_cast<ssize_t>(sizeof(message)) ||
        ::read(fds[0], message, sizeof(message)) != static_cast<ssize_t>(sizeof(message))) {
      break;
    }
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ::close(fds[0]);
  ::waitpid(child, nullptr, 0);
  return trips / seconds;
}

// Processes per second that `path` (run with `args`) can be started and waited for:
// the floor under anything that starts a process, such as a new actor's worker.
inline double ProcessSpawnsPerSecond(const std::string& path, std::vector<std::string> args, int count = 50) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    pid_t pid = 0;
    if (::posix_spawn(&pid, path.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return 0;
    ::waitpid(pid, nullptr, 0);
  }
  return count / std::chrono::duration<double>(Clock::now() - start).count();
}

// The number `command` prints (0 when it prints none).
inline double OutputOf(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return 0;
  double value = 0;
  if (std::fscanf(pipe, "%lf", &value) != 1) value = 0;
  ::pclose(pipe);
  return value;
}

// fork() of this process and waitpid() for the child, which exits at once: what a worker
// forked by a job's fork server costs at least.
inline double ForksPerSecond(int count = 200) {
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    pid_t pid = ::fork();
    if (pid < 0) return 0;
    if (pid == 0) ::_exit(0);
    ::waitpid(pid, nullptr, 0);
  }
  return count / std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace bench

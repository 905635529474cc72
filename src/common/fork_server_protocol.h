// Between a raylet and a job's fork server: a process of the job's worker executable,
// started once, that forks each new worker of that job instead of the raylet starting
// the executable again (src/core/fork_server.cc, src/raylet/fork_servers.cc).
//
//   request:  u32 length | output_path \0 working_dir \0 NAME=VALUE \0 ...
//   response: i32 the new worker's pid, or -errno
//
// One request at a time on a Unix socket readable by its owner only. The fork server
// finds its socket in ORB_FORK_SERVER; the workers it forks are told so by
// ORB_WORKER_STARTED_BY=fork_server.
#pragma once

#include <cstdint>

namespace orb::fork_server {

constexpr char kSocketEnv[] = "ORB_FORK_SERVER";
constexpr char kStartedByEnv[] = "ORB_WORKER_STARTED_BY";
constexpr uint32_t kMaxRequestBytes = 1u << 20;

}  // namespace orb::fork_server

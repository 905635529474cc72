// Finding orb's daemon binaries and starting them, for the embedded cluster and the CLI.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace orb {

// Where orb's daemons are: $ORB_BIN_DIR, the bin/ beside this binary's lib/ (build and
// install trees alike), this binary's own directory, the install prefix, then $PATH.
// Empty when not found.
std::string FindOrbBinary(const std::string& name);

// Starts a daemon whose stdout says "... listening on HOST:PORT ..." and waits for that
// line; returns its pid and "HOST:PORT". The daemon runs in its own session, so a
// Ctrl-C in the terminal reaches the program and not the daemons.
struct DaemonStart {
  pid_t pid = 0;
  std::string address;
};
absl::StatusOr<DaemonStart> StartDaemon(const std::vector<std::string>& argv, const std::string& output_path,
                                        bool die_with_parent, std::chrono::milliseconds timeout);

}  // namespace orb

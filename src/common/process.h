// Starting, watching and stopping child processes (daemons and workers).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace orb {

struct ProcessOptions {
  std::vector<std::string> argv;               // argv[0] is the executable path
  std::map<std::string, std::string> env;      // added to (or replacing in) this environment
  std::string output_path;                     // stdout and stderr go here; empty: inherit
  std::string working_dir;                     // the child's current directory; empty: inherit
  bool die_with_parent = false;                // SIGKILL the child when this process dies
  bool new_process_group = false;              // detach from the terminal's signals
};

absl::StatusOr<pid_t> SpawnProcess(const ProcessOptions& options);
bool IsProcessAlive(pid_t pid);
// Sends SIGTERM, waits up to `grace`, then SIGKILL. Reaps the child if it is ours.
void StopProcess(pid_t pid, std::chrono::milliseconds grace);
// Non-blocking reap of any exited child; returns its pid, or 0 when none has exited.
pid_t ReapAnyChild(int* exit_status);
std::string SelfExecutablePath();
// The directory holding this process's executable.
std::string SelfExecutableDir();

}  // namespace orb

namespace orb {
// Blocks SIGTERM, SIGINT and SIGHUP in this thread and every thread it starts later;
// call first thing in main(), then WaitForTerminationSignal() on the main thread.
void BlockTerminationSignals();
// Waits for one of those signals; returns it.
int WaitForTerminationSignal();
// Waits up to `timeout` for one of those signals; returns it, or 0 when none came.
int WaitForTerminationSignalFor(std::chrono::milliseconds timeout);
}  // namespace orb

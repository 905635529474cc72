// Keeps a node out of the kernel's OOM killer, which would pick the biggest process (the
// raylet, or the object store's owner) and take the node down: when the node's memory use
// passes a threshold, the raylet kills one worker running leased work, chosen as Ray
// chooses (a retriable task's worker before one whose work cannot be retried; among
// those, the newest lease first, as it has done the least work), and waits for it to go
// before it would kill another. Never the raylet, the GCS or a driver.
//
// The worker's task fails with OutOfMemoryError naming the node, the memory in use, the
// threshold and the worker's own use; its owner retries it if it may.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/id.h"
#include "raylet/node_memory.h"

namespace orb {

struct MemoryMonitorOptions {
  double usage_threshold = 0.95;            // fraction of the node's memory; >= 1 turns it off
  std::chrono::milliseconds interval{250};  // how often it looks; 0 turns it off
  bool enabled() const { return usage_threshold < 1 && interval.count() > 0; }
};

// A worker that runs leased work, as the monitor weighs it.
struct OomCandidate {
  WorkerID worker;
  pid_t pid = 0;
  bool retriable = false;
  std::chrono::steady_clock::time_point leased_at;
  uint64_t memory_bytes = 0;  // what it uses (its cgroup, or its resident set)
};

// The candidate to kill: retriable first, then the newest lease. nullopt when none.
std::optional<size_t> ChooseOomVictim(const std::vector<OomCandidate>& candidates);

class MemoryMonitor {
 public:
  using UseReader = std::function<MemoryUse()>;
  using CandidateLister = std::function<std::vector<OomCandidate>()>;
  // Kills the victim; `why` is what its task's OutOfMemoryError says.
  using Killer = std::function<void(const OomCandidate& victim, const std::string& why)>;

  MemoryMonitor(MemoryMonitorOptions options, std::string node_name, UseReader read_use,
                CandidateLister list_candidates, Killer kill);

  // One look: kills at most one worker, and none while the last one killed still runs.
  void Check();
  // "threshold 95%, node at 41% (9.8 of 24.0 GiB), 2 workers killed" or "off".
  std::string Describe() const;
  uint64_t kills() const { return kills_; }
  const MemoryMonitorOptions& options() const { return options_; }

 private:
  MemoryMonitorOptions options_;
  std::string node_name_;
  UseReader read_use_;
  CandidateLister list_candidates_;
  Killer kill_;
  MemoryUse last_use_;
  pid_t last_victim_ = 0;
  std::chrono::steady_clock::time_point last_kill_;
  uint64_t kills_ = 0;
};

// "1.5 GiB", "300.0 MiB".
std::string FormatBytes(uint64_t bytes);

}  // namespace orb

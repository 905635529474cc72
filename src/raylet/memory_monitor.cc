#include "raylet/memory_monitor.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>

namespace orb {

std::optional<size_t> ChooseOomVictim(const std::vector<OomCandidate>& candidates) {
  std::optional<size_t> best;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!best) {
      best = i;
      continue;
    }
    const OomCandidate& c = candidates[i];
    const OomCandidate& b = candidates[*best];
    if (c.retriable != b.retriable ? c.retriable : c.leased_at > b.leased_at) best = i;
  }
  return best;
}

std::string FormatBytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  } else {
    std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  }
  return text;
}

namespace {

std::string Percent(double fraction) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.1f%%", fraction * 100);
  return text;
}

}  // namespace

MemoryMonitor::MemoryMonitor(MemoryMonitorOptions options, std::string node_name, UseReader read_use,
                             CandidateLister list_candidates, Killer kill)
    : options_(options), node_name_(std::move(node_name)), read_use_(std::move(read_use)),
      list_candidates_(std::move(list_candidates)), kill_(std::move(kill)) {}

void MemoryMonitor::Check() {
  if (!options_.enabled()) return;
  last_use_ = read_use_();
  if (last_use_.fraction() <= options_.usage_threshold) return;
  // The last victim may not have let go of its memory yet: wait for it (a while).
  if (last_victim_ != 0 && ::kill(last_victim_, 0) == 0 &&
      std::chrono::steady_clock::now() - last_kill_ < std::chrono::seconds(5)) {
    return;
  }
  std::vector<OomCandidate> candidates = list_candidates_();
  auto victim = ChooseOomVictim(candidates);
  if (!victim) {
    spdlog::warn("node memory at {} is above the threshold {}, and no worker runs leased work to free it",
                 Percent(last_use_.fraction()), Percent(options_.usage_threshold));
    last_victim_ = 0;
    last_kill_ = std::chrono::steady_clock::now();
    return;
  }
  const OomCandidate& c = candidates[*victim];
  std::string why = "killed by the memory monitor of node " + node_name_ + ": the node's memory use " +
                    Percent(last_use_.fraction()) + " (" + FormatBytes(last_use_.used) + " of " +
                    FormatBytes(last_use_.total) + ") was above the threshold " + Percent(options_.usage_threshold) +
                    "; this worker used " + FormatBytes(c.memory_bytes) + " (the " +
                    (c.retriable ? "newest retriable" : "newest") + " of " + std::to_string(candidates.size()) +
                    " leased worker(s))";
  spdlog::warn("worker {} (pid {}) {}", c.worker.Hex(), c.pid, why);
  last_victim_ = c.pid;
  last_kill_ = std::chrono::steady_clock::now();
  ++kills_;
  kill_(c, why);
}

std::string MemoryMonitor::Describe() const {
  if (!options_.enabled()) return "off";
  std::string out = "threshold " + Percent(options_.usage_threshold);
  if (last_use_.total > 0) {
    out += ", node at " + Percent(last_use_.fraction()) + " (" + FormatBytes(last_use_.used) + " of " +
           FormatBytes(last_use_.total) + ")";
  }
  return out + ", " + std::to_string(kills_) + " worker(s) killed";
}

}  // namespace orb

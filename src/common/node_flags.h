// The flags that describe a node and its head, shared by `orb start` and by the
// embedded cluster a program starts for itself (Config::head_args, as Ray's RayConfig
// head_args are extra `ray start --head` flags): one definition, one translation into
// the gcs_server and raylet command lines.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace CLI {
class App;
}  // namespace CLI

namespace orb {

// The largest RPC request the GCS and raylets accept unless told otherwise.
inline constexpr long long kDefaultMaxMessageBytes = 64ll << 20;
// Free disk below which the GCS refuses writes to its storage.
inline constexpr long long kDefaultMinFreeDiskBytes = 64ll << 20;

struct NodeFlags {
  // --- the node (every raylet) ---
  double num_cpus = -1;  // < 0: the core count
  double num_gpus = -1;  // < 0: detected
  double memory = -1;    // < 0: the available memory less the object store
  std::string resources;  // JSON object of custom resources
  std::string labels;     // JSON object of strings
  long long object_store_memory = 0;  // 0: 30% of the available memory
  std::string object_spilling_directory;  // empty: <session>/spill
  double object_spilling_threshold = 0.8;
  std::string node_ip = "127.0.0.1";
  int infeasible_grace_ms = 3000;  // how long work no node can run waits before INFEASIBLE
  int idle_worker_timeout_ms = 60000;  // a worker idle this long is asked to exit
  long long max_message_bytes = kDefaultMaxMessageBytes;  // the largest RPC request daemons accept
  int metrics_export_port = -1;  // the raylet's Prometheus /metrics: < 0 a free port, 0 none
  std::string worker_cgroups = "auto";  // workers in cgroups with their leases' limits: auto, on, off
  double memory_usage_threshold = 0.95;  // the memory monitor kills a worker above this (1: off)
  int memory_monitor_interval_ms = 250;  // how often it looks (0: off)
  std::string gpu_mps = "auto";          // MPS shares for fractional GPU leases: auto, on, off
  // --- the head (GCS) ---
  int port = 6379;          // 0 picks a free one
  std::string storage_dir;  // empty: <session>/storage
  long long min_free_disk_bytes = kDefaultMinFreeDiskBytes;  // the GCS refuses writes below this
  int gcs_metrics_export_port = -1;  // the GCS's Prometheus /metrics: < 0 a free port, 0 none
  int dashboard_port = -1;           // the head's web dashboard: < 0 a free port, 0 none
};

// Declares --num-cpus, --num-gpus, --memory, --resources, --labels,
// --object-store-memory, --object-spilling-directory, --object-spilling-threshold,
// --node-ip-address, --infeasible-grace-ms, --idle-worker-timeout-ms, --metrics-export-port, --worker-cgroups,
// --memory-usage-threshold, --memory-monitor-interval-ms, --gpu-mps, --port,
// --storage-dir, --gcs-metrics-export-port and --dashboard-port on `app`.
void AddNodeFlags(CLI::App* app, NodeFlags* flags);

// Declares --worker-cgroups, --memory-usage-threshold, --memory-monitor-interval-ms and
// --gpu-mps (the raylet's own command line has them too).
void AddIsolationFlags(CLI::App* app, std::string* worker_cgroups, double* memory_usage_threshold,
                       int* memory_monitor_interval_ms, std::string* gpu_mps);

// Applies `args` (e.g. {"--num-cpus", "2", "--resources", "{\"a\": 1}"}) to `flags`.
// InvalidArgument naming the flag for an unknown flag or a bad value.
absl::Status ParseNodeFlags(const std::vector<std::string>& args, NodeFlags* flags);

// Where a raylet writes and whom it joins.
struct RayletPlacement {
  std::string raylet_bin;
  std::string gcs_address;
  std::string session_dir;
  std::string token_file;
  std::string log_tag;  // its logs are logs/raylet-<tag>.log (.out); empty: raylet.log
  bool head = false;    // the head's raylet (it offers node:__internal_head__)
};
std::vector<std::string> RayletArgs(const NodeFlags& flags, const RayletPlacement& where);
// The gcs_server command line of a head; `storage_dir` empty keeps tables in memory.
std::vector<std::string> GcsArgs(const NodeFlags& flags, const std::string& gcs_bin, const std::string& session_dir,
                                 const std::string& token_file, const std::string& storage_dir);

}  // namespace orb

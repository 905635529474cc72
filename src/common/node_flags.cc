#include "common/node_flags.h"

#include <CLI/CLI.hpp>

namespace orb {

void AddIsolationFlags(CLI::App* app, std::string* worker_cgroups, double* memory_usage_threshold,
                       int* memory_monitor_interval_ms, std::string* gpu_mps) {
  app->add_option("--worker-cgroups", *worker_cgroups,
                  "run each worker in a cgroup limited to its lease's CPU and memory: auto (where possible), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app->add_option("--memory-usage-threshold", *memory_usage_threshold,
                  "node memory use (a fraction) above which the newest retriable worker is killed (default 0.95; 1: off)")
      ->check(CLI::Range(0.0, 1.0));
  app->add_option("--memory-monitor-interval-ms", *memory_monitor_interval_ms,
                  "how often the memory monitor looks (default 250; 0: off)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--gpu-mps", *gpu_mps,
                  "give fractional GPU leases an MPS share: auto (when an MPS daemon runs), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
}

void AddNodeFlags(CLI::App* app, NodeFlags* flags) {
  app->add_option("--num-cpus", flags->num_cpus, "CPUs this node offers (default: core count)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--num-gpus", flags->num_gpus, "GPUs this node offers (default: detected)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--memory", flags->memory,
                  "memory this node offers for tasks, bytes (default: available memory less the object store)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--resources", flags->resources, "custom resources as JSON, e.g. '{\"zone_a\": 4}'");
  app->add_option("--labels", flags->labels, "node labels as JSON, e.g. '{\"zone\": \"a\"}'");
  app->add_option("--object-store-memory", flags->object_store_memory,
                  "object store capacity, bytes (default: 30% of available memory, within /dev/shm)");
  app->add_option("--object-spilling-directory", flags->object_spilling_directory,
                  "where the object store spills objects under pressure (default: <session>/spill)");
  app->add_option("--object-spilling-threshold", flags->object_spilling_threshold,
                  "fraction of the object store in use above which objects are spilled (default 0.8)")
      ->check(CLI::Range(0.0, 1.0));
  app->add_option("--node-ip-address", flags->node_ip, "address other processes use to reach this node");
  app->add_option("--infeasible-grace-ms", flags->infeasible_grace_ms,
                  "work no node (and no node type the autoscaler may add) can run fails after this long")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--idle-worker-timeout-ms", flags->idle_worker_timeout_ms,
                  "a worker idle this long exits, unless objects it owns are still in use (default 60000)")
      ->check(CLI::PositiveNumber);
  app->add_option("--max-message-bytes", flags->max_message_bytes,
                  "largest RPC request the GCS and raylets accept, bytes (default 64 MiB)")
      ->check(CLI::Range(1ll << 20, (1ll << 31) - 1));
  app->add_option("--metrics-export-port", flags->metrics_export_port,
                  "the raylet's Prometheus /metrics port (default: a free one, shown by `orb metrics targets`; 0: none)")
      ->check(CLI::Range(-1, 65535));
  AddIsolationFlags(app, &flags->worker_cgroups, &flags->memory_usage_threshold, &flags->memory_monitor_interval_ms,
                    &flags->gpu_mps);
  app->add_option("--port", flags->port, "GCS port for a head (0 picks a free one)")->check(CLI::Range(0, 65535));
  app->add_option("--gcs-metrics-export-port", flags->gcs_metrics_export_port,
                  "a head's GCS Prometheus /metrics port (default: a free one; 0: none)")
      ->check(CLI::Range(-1, 65535));
  app->add_option("--dashboard-port", flags->dashboard_port,
                  "a head's web dashboard port (default: a free one, printed by `orb start --head`; 0: none)")
      ->check(CLI::Range(-1, 65535));
  app->add_option("--storage-dir", flags->storage_dir, "GCS RocksDB directory (default: <session>/storage)");
  app->add_option("--min-free-disk-bytes", flags->min_free_disk_bytes,
                  "the GCS refuses writes (with an error) when its storage disk has less free, bytes (default 64 MiB)")
      ->check(CLI::NonNegativeNumber);
}

absl::Status ParseNodeFlags(const std::vector<std::string>& args, NodeFlags* flags) {
  CLI::App app{"head_args"};
  AddNodeFlags(&app, flags);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(std::string("head_args: ") + e.what());
  }
  return absl::OkStatus();
}

std::vector<std::string> RayletArgs(const NodeFlags& o, const RayletPlacement& where) {
  std::string log = where.session_dir + "/logs/raylet" + (where.log_tag.empty() ? "" : "-" + where.log_tag) + ".log";
  std::vector<std::string> argv = {where.raylet_bin, "--gcs-address", where.gcs_address, "--port", "0",
                                   "--session-dir", where.session_dir, "--token-file", where.token_file,
                                   "--node-ip-address", o.node_ip, "--log-file", log,
                                   "--infeasible-grace-ms", std::to_string(o.infeasible_grace_ms),
                                   "--idle-worker-timeout-ms", std::to_string(o.idle_worker_timeout_ms),
                                   "--max-message-bytes", std::to_string(o.max_message_bytes),
                                   "--metrics-export-port", std::to_string(o.metrics_export_port)};
  if (o.node_ip != "127.0.0.1") argv.insert(argv.end(), {"--bind", "0.0.0.0"});
  if (where.head) argv.push_back("--head");
  if (o.num_cpus >= 0) argv.insert(argv.end(), {"--num-cpus", std::to_string(o.num_cpus)});
  if (o.num_gpus >= 0) argv.insert(argv.end(), {"--num-gpus", std::to_string(o.num_gpus)});
  if (o.memory >= 0) argv.insert(argv.end(), {"--memory", std::to_string(o.memory)});
  if (!o.resources.empty()) argv.insert(argv.end(), {"--resources", o.resources});
  if (!o.labels.empty()) argv.insert(argv.end(), {"--labels", o.labels});
  if (o.object_store_memory > 0) argv.insert(argv.end(), {"--object-store-memory", std::to_string(o.object_store_memory)});
  if (!o.object_spilling_directory.empty()) {
    argv.insert(argv.end(), {"--object-spilling-directory", o.object_spilling_directory});
  }
  argv.insert(argv.end(), {"--object-spilling-threshold", std::to_string(o.object_spilling_threshold)});
  argv.insert(argv.end(), {"--worker-cgroups", o.worker_cgroups, "--memory-usage-threshold",
                           std::to_string(o.memory_usage_threshold), "--memory-monitor-interval-ms",
                           std::to_string(o.memory_monitor_interval_ms), "--gpu-mps", o.gpu_mps});
  return argv;
}

std::vector<std::string> GcsArgs(const NodeFlags& o, const std::string& gcs_bin, const std::string& session_dir,
                                 const std::string& token_file, const std::string& storage_dir) {
  std::vector<std::string> argv = {gcs_bin, "--port", std::to_string(o.port), "--token-file", token_file,
                                   "--log-file", session_dir + "/logs/gcs_server.log",
                                   "--max-message-bytes", std::to_string(o.max_message_bytes),
                                   "--min-free-disk-bytes", std::to_string(o.min_free_disk_bytes),
                                   "--metrics-export-port", std::to_string(o.gcs_metrics_export_port),
                                   "--dashboard-port", std::to_string(o.dashboard_port)};
  if (!storage_dir.empty()) argv.insert(argv.end(), {"--storage-dir", storage_dir});
  if (o.node_ip != "127.0.0.1") argv.insert(argv.end(), {"--bind", "0.0.0.0", "--node-ip-address", o.node_ip});
  return argv;
}

}  // namespace orb

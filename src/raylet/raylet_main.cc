// raylet: one node of an orb cluster.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/logging.h"
#include "common/process.h"
#include "common/resources.h"
#include "common/session.h"
#include "gossip/gossip_flags.h"
#include "raylet/node_memory.h"
#include "raylet/raylet.h"

namespace orb {

static int DetectGpus() {
  int n = 0;
  for (int i = 0; i < 64; ++i) n += std::filesystem::exists("/dev/nvidia" + std::to_string(i));
  return n;
}

static absl::StatusOr<std::map<std::string, std::string>> ParseLabels(const std::string& text) {
  std::map<std::string, std::string> labels;
  if (text.empty()) return labels;
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError("--labels must be a JSON object of strings, e.g. '{\"zone\": \"a\"}'");
  }
  for (const auto& [k, v] : parsed.items()) {
    if (!v.is_string()) return absl::InvalidArgumentError("label '" + k + "' must be a string");
    labels[k] = v.get<std::string>();
  }
  return labels;
}

int RayletMain(int argc, char** argv) {
  BlockTerminationSignals();
  CLI::App app{"orb raylet: runs tasks and stores objects on one node"};
  RayletOptions options;
  double num_cpus = std::thread::hardware_concurrency();
  double num_gpus = DetectGpus();
  NodeMemory node_memory = ReadNodeMemory();
  double memory = -1;  // default: what the object store leaves of the available memory
  std::string resources_json = "{}";
  std::string labels_json;
  std::string token_file;
  std::string log_file;
  int64_t object_store_memory = 0;  // default: DefaultObjectStoreBytes
  int idle_ms = 60000;
  int infeasible_ms = 3000;
  bool head = false;
  app.add_option("--gcs-address", options.gcs_address, "GCS address HOST:PORT")->required();
  app.add_option("--port", options.port, "port to serve on (0 picks a free one)")->check(CLI::Range(0, 65535));
  app.add_option("--object-manager-port", options.object_manager_port,
                 "port other nodes pull objects from (0 picks a free one)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--bind", options.bind, "address to bind (default loopback only)");
  app.add_option("--node-ip-address", options.node_ip, "address other processes use to reach this node");
  app.add_flag("--head", head, "this is the cluster's head node: it offers node:__internal_head__");
  app.add_option("--num-cpus", num_cpus, "CPUs to offer (default: core count)")->check(CLI::NonNegativeNumber);
  app.add_option("--num-gpus", num_gpus, "GPUs to offer (default: detected)")->check(CLI::NonNegativeNumber);
  app.add_option("--memory", memory, "memory to offer for tasks, bytes (default: available memory less the object store)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--resources", resources_json, "custom resources as JSON, e.g. '{\"zone_a\": 4}'");
  app.add_option("--labels", labels_json, "node labels as JSON, e.g. '{\"zone\": \"a\"}'");
  app.add_option("--object-store-memory", object_store_memory,
                 "object store capacity, bytes (default: 30% of available memory, within /dev/shm)")
      ->check(CLI::Range(int64_t{1} << 20, int64_t{1} << 45));
  app.add_option("--object-spilling-directory", options.spill_dirs,
                 "where objects are spilled under store pressure: a directory, or several separated by commas "
                 "(default: <session-dir>/spill)")
      ->delimiter(',');
  app.add_option("--object-spilling-threshold", options.spill_threshold,
                 "fraction of the object store in use above which objects are spilled to disk")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--session-dir", options.session_dir, "session directory (logs of workers go to its logs/)");
  app.add_option("--token-file", token_file, "file holding the cluster token");
  app.add_option("--default-worker", options.default_worker_path, "worker binary for jobs that use code_search_path");
  app.add_option("--python-executable", options.python_executable,
                 "Python interpreter for the Python workers of jobs that name none (C++ jobs calling Python; "
                 "default: /usr/bin/python3 where it exists, else python3 on PATH)");
  app.add_option("--idle-worker-timeout-ms", idle_ms, "a worker idle this long exits, unless objects it owns are still in use")->check(CLI::PositiveNumber);
  app.add_option("--infeasible-grace-ms", infeasible_ms, "answer INFEASIBLE after this long")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--metrics-export-port", options.metrics_export_port,
                 "Prometheus /metrics port (default -1: a free one, in the node table; 0: none)")
      ->check(CLI::Range(-1, 65535));
  app.add_option("--max-message-bytes", options.max_message_bytes, "largest RPC request accepted, bytes (default 64 MiB)")
      ->check(CLI::Range(int64_t{1} << 20, (int64_t{1} << 31) - 1));
  app.add_option("--log-file", log_file, "log here instead of stderr");
  int memory_monitor_ms = 250;
  AddIsolationFlags(&app, &options.worker_cgroups, &options.memory_monitor.usage_threshold, &memory_monitor_ms,
                    &options.gpu_mps);
  gossip::GossipFlagValues gossip_flags;
  gossip::AddGossipFlags(app, &gossip_flags);
  CLI11_PARSE(app, argc, argv);
  InitLogging("raylet", log_file);

  auto fail = [](const std::string& why) {
    std::cerr << "raylet: " << why << "\n";
    return 2;
  };
  std::string host;
  int gcs_port;
  if (auto s = ParseAddress(options.gcs_address, &host, &gcs_port); !s.ok()) return fail(std::string(s.message()));
  auto custom = ResourceSet::ParseJson(resources_json);
  if (!custom.ok()) return fail(std::string(custom.status().message()));
  for (const char* reserved : {"CPU", "GPU", "memory"}) {
    if (custom->Get(reserved) > 0) return fail(std::string("set ") + reserved + " with its own flag, not --resources");
  }
  // As Ray's: every node offers one `node:<its address>`, the head `node:__internal_head__`
  // too, so that work can be pinned to a node (or the head) by resource.
  custom->Set(std::string(kNodeResourcePrefix) + options.node_ip, 1);
  if (head) custom->Set(kHeadNodeResource, 1);
  auto labels = ParseLabels(labels_json);
  if (!labels.ok()) return fail(std::string(labels.status().message()));
  options.labels = *labels;
  options.resources = *custom;
  options.resources.Set("CPU", num_cpus);
  options.resources.Set("GPU", num_gpus);
  if (object_store_memory == 0) object_store_memory = static_cast<int64_t>(DefaultObjectStoreBytes(node_memory));
  if (memory < 0) memory = static_cast<double>(DefaultMemoryResource(node_memory, object_store_memory));
  options.resources.Set("memory", memory);
  options.object_store_bytes = static_cast<uint64_t>(object_store_memory);
  options.idle_worker_timeout = std::chrono::milliseconds(idle_ms);
  options.infeasible_grace = std::chrono::milliseconds(infeasible_ms);
  options.memory_monitor.interval = std::chrono::milliseconds(memory_monitor_ms);
  options.gossip = gossip::ToGossipOptions(gossip_flags);
  if (!token_file.empty()) {
    auto token = ReadFileToString(token_file);
    if (!token.ok()) return fail(std::string(token.status().message()));
    options.token = *token;
  }
  if (options.default_worker_path.empty()) {
    const char* bin = std::getenv("ORB_BIN_DIR");
    std::string dir = bin && *bin ? bin : SelfExecutableDir();
    options.default_worker_path = dir + "/orb_default_worker";
  }
  if (options.python_executable == "python3" && std::filesystem::exists("/usr/bin/python3")) {
    options.python_executable = "/usr/bin/python3";
  }
  // A build tree keeps the orb Python package beside bin/; Python workers find it there
  // when it is not installed.
  std::string python_dir = SelfExecutableDir() + "/../python";
  if (std::filesystem::exists(python_dir + "/orb/__init__.py")) {
    options.python_path.push_back(std::filesystem::weakly_canonical(python_dir).string());
  }

  auto raylet = Raylet::Create(options);
  if (!raylet.ok()) return fail(std::string(raylet.status().message()));
  if (auto s = (*raylet)->Start(); !s.ok()) return fail(std::string(s.message()));
  std::cout << "raylet listening on " << options.node_ip << ":" << (*raylet)->port()
            << " node_id=" << (*raylet)->node_id().Hex() << std::endl;
  int sig = WaitForTerminationSignal();
  spdlog::info("raylet stopping on signal {}", sig);
  (*raylet)->Stop();
  return 0;
}

}  // namespace orb

int main(int argc, char** argv) { return orb::RayletMain(argc, argv); }

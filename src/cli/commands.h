// The CLI's subcommands; each returns the process exit code.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/node_flags.h"

namespace orb::cli {

struct StartOptions {
  bool head = false;
  std::string address;
  std::string token;
  std::string autoscaling_config;  // head only: a YAML or JSON file with available_node_types
  // head only: run the autoscaler with this cluster YAML (a file, or the environment
  // variable named by autoscale_config_env, as in the head pod)
  std::string autoscale_config;
  std::string autoscale_config_env;
  bool block = false;  // stay in the foreground until a signal or the raylet's end, then stop what it started
  NodeFlags node;
};

struct UpOptions {
  std::string config_path;
  bool dry_run = false;  // check the config and print what would be made, make nothing
  int timeout_s = 300;  // how long to wait for the head and min_workers nodes
};

struct DownOptions {
  std::string config_path;
  int timeout_s = 120;
};

struct StopOptions {
  bool force = false;   // SIGKILL at once
  bool all = false;     // every orb process of this user
  std::string address;  // only the cluster at this GCS address
};

int Start(const StartOptions& options);
// `orb up cluster.yaml` / `orb down cluster.yaml` (up_down.cc).
int Up(const UpOptions& options);
int Down(const DownOptions& options);
int Status(const std::string& address);
int Stop(const StopOptions& options);
struct ListOptions {
  std::string kind;  // nodes, jobs, actors, tasks, workers, placement-groups, objects
  std::string address;
  std::vector<std::string> filters;  // "key=value" / "key!=value"
  std::string format = "table";      // table, json or yaml
  int limit = 1000;
};
// `orb list <kind>`, `orb summary tasks|actors`, `orb get <kind> ID` (state.cc).
int List(const ListOptions& options);
int Summary(const std::string& kind, const std::string& address, const std::string& format);
int Get(const std::string& kind, const std::string& id, const std::string& address, const std::string& format);
// `orb timeline`: the tasks the GCS remembers as a Chrome trace (timeline.cc).
int Timeline(const std::string& address, const std::string& output);
// `orb metrics targets`: the cluster's /metrics endpoints as Prometheus file_sd JSON.
int MetricsTargets(const std::string& address, const std::string& output);
struct LogsOptions {
  std::string address;
  std::string name;  // a file of a node's logs/; empty: list them (unless a process is named)
  std::string node;  // a node ID (or its start)
  std::string worker, actor, task;  // the log of the process that is (or ran) this
  bool follow = false;
  int tail = 1000;  // lines printed before following
  std::string pod;             // a node's pod (name, or the node's ID): its container log
  std::string cluster_config;  // the cluster YAML, for --pod
};
// `orb logs` (logs.cc).
int Logs(const LogsOptions& options);
// `orb logs --pod`: a pod's container log, then its node's orb logs (pod_logs.cc).
int PodLogs(const LogsOptions& options);
// Every object of the cluster as state rows (objects.cc).
absl::StatusOr<std::vector<nlohmann::json>> ObjectRows(const std::string& address);
// `orb memory`: each node's store, then the objects by owner (objects.cc).
int Memory(const std::string& address, const std::string& format);
// `orb drain-node`: the live node whose ID starts with `node_prefix` stops taking work
// and hands its objects to other nodes (drain.cc).
int DrainNode(const std::string& node_prefix, const std::string& reason, const std::string& address);
// `given`, or the local cluster's address; empty (after saying so) when there is none.
std::string ResolveClusterAddress(const std::string& given, const std::string& command);

}  // namespace orb::cli

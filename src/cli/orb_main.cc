// orb: the command line. `orb start --head`, `orb start --address`, `orb status`,
// `orb list <kind>`, `orb summary`, `orb get`, `orb timeline`, `orb metrics targets`,
// `orb memory`, `orb stop`.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"orb: a distributed task runtime. Start a cluster, add nodes, inspect and stop it."};
  app.require_subcommand(1);
  orb::cli::StartOptions start;
  auto* start_cmd = app.add_subcommand("start", "start a head node (--head) or add a node to a cluster (--address)");
  start_cmd->add_flag("--head", start.head, "start the GCS and a raylet: a new cluster");
  start_cmd->add_option("--address", start.address, "GCS address HOST:PORT of the cluster to join");
  orb::AddNodeFlags(start_cmd, &start.node);
  start_cmd->add_option("--autoscaling-config", start.autoscaling_config,
                        "head: YAML/JSON with available_node_types; work only such a node could run waits for one")
      ->check(CLI::ExistingFile);
  start_cmd->add_option("--token", start.token, "the cluster token (default: $ORB_TOKEN; else, joining, the local session's; else, a head, a new one)");
  start_cmd->add_option("--autoscale-config", start.autoscale_config,
                        "head: run the autoscaler with this cluster YAML (as `orb up` does)")
      ->check(CLI::ExistingFile);
  start_cmd->add_option("--autoscale-config-env", start.autoscale_config_env,
                        "head: run the autoscaler with the cluster YAML held in this environment variable");
  start_cmd->add_flag("--block", start.block,
                      "stay in the foreground; on SIGTERM or when the raylet ends, stop everything it started "
                      "(the command of a pod or a service)");
  start_cmd->callback([&] { std::exit(orb::cli::Start(start)); });

  orb::cli::UpOptions up;
  auto* up_cmd = app.add_subcommand("up", "start a cluster from a cluster YAML: its head, the autoscaler, min_workers nodes");
  up_cmd->add_option("config", up.config_path, "the cluster YAML")->required()->check(CLI::ExistingFile);
  up_cmd->add_option("--timeout", up.timeout_s, "seconds to wait for the head and min_workers nodes");
  up_cmd->add_flag("--dry-run", up.dry_run,
                   "check the config and print what would be made (kubernetes: the pods, as a List for kubectl)");
  up_cmd->callback([&] { std::exit(orb::cli::Up(up)); });

  orb::cli::DownOptions down;
  auto* down_cmd = app.add_subcommand("down", "stop a cluster started by `orb up`: every node it made, then the head");
  down_cmd->add_option("config", down.config_path, "the cluster YAML")->required()->check(CLI::ExistingFile);
  down_cmd->add_option("--timeout", down.timeout_s, "seconds to wait for the nodes to be gone");
  down_cmd->callback([&] { std::exit(orb::cli::Down(down)); });

  std::string status_address;
  auto* status_cmd = app.add_subcommand("status", "show nodes, resource usage and pending demand");
  status_cmd->add_option("--address", status_address, "GCS address (default: the local cluster)");
  status_cmd->callback([&] { std::exit(orb::cli::Status(status_address)); });

  std::vector<std::string> kinds = {"nodes", "jobs", "actors", "tasks", "workers", "placement-groups", "objects"};
  orb::cli::ListOptions list;
  auto* list_cmd = app.add_subcommand("list", "list the cluster's nodes, jobs, actors, tasks, workers, "
                                              "placement-groups or objects");
  list_cmd->add_option("kind", list.kind, "what to list")->required()->check(CLI::IsMember(kinds));
  list_cmd->add_option("--filter", list.filters,
                       "keep rows whose column matches: key=value or key!=value (repeatable; case-insensitive)");
  list_cmd->add_option("--limit", list.limit, "rows shown at most (default 1000; 0: all)")->check(CLI::NonNegativeNumber);
  list_cmd->add_option("--format", list.format, "table, json or yaml")->check(CLI::IsMember({"table", "json", "yaml"}));
  list_cmd->add_option("--address", list.address, "GCS address (default: the local cluster)");
  list_cmd->callback([&] { std::exit(orb::cli::List(list)); });

  std::string summary_kind, summary_address, summary_format = "table";
  auto* summary_cmd = app.add_subcommand("summary", "count tasks by function, or actors by class, in each state");
  summary_cmd->add_option("kind", summary_kind, "tasks or actors")->required()->check(CLI::IsMember({"tasks", "actors"}));
  summary_cmd->add_option("--format", summary_format, "table, json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}));
  summary_cmd->add_option("--address", summary_address, "GCS address (default: the local cluster)");
  summary_cmd->callback([&] { std::exit(orb::cli::Summary(summary_kind, summary_address, summary_format)); });

  std::string get_kind, get_id, get_address, get_format = "yaml";
  auto* get_cmd = app.add_subcommand("get", "show one node, job, actor, task, worker, placement-group or object");
  get_cmd->add_option("kind", get_kind, "node, job, actor, task, worker, placement-group or object")->required();
  get_cmd->add_option("id", get_id, "its ID (hex)")->required();
  get_cmd->add_option("--format", get_format, "yaml or json")->check(CLI::IsMember({"yaml", "json"}));
  get_cmd->add_option("--address", get_address, "GCS address (default: the local cluster)");
  get_cmd->callback([&] { std::exit(orb::cli::Get(get_kind, get_id, get_address, get_format)); });

  std::string timeline_address, timeline_output;
  auto* timeline_cmd = app.add_subcommand("timeline", "write the tasks' runs as a Chrome trace (Perfetto, chrome://tracing)");
  timeline_cmd->add_option("--output", timeline_output, "the trace file (default: stdout)");
  timeline_cmd->add_option("--address", timeline_address, "GCS address (default: the local cluster)");
  timeline_cmd->callback([&] { std::exit(orb::cli::Timeline(timeline_address, timeline_output)); });

  std::string targets_address, targets_output;
  auto* metrics_cmd = app.add_subcommand("metrics", "the cluster's Prometheus endpoints");
  metrics_cmd->require_subcommand(1);
  auto* targets_cmd = metrics_cmd->add_subcommand("targets", "print the /metrics endpoints as Prometheus file_sd JSON");
  targets_cmd->add_option("--output", targets_output, "write here (default: stdout)");
  targets_cmd->add_option("--address", targets_address, "GCS address (default: the local cluster)");
  targets_cmd->callback([&] { std::exit(orb::cli::MetricsTargets(targets_address, targets_output)); });

  orb::cli::LogsOptions logs;
  auto* logs_cmd = app.add_subcommand("logs", "list the nodes' log files, or print one: by name, or the log of a "
                                              "worker, actor or task");
  logs_cmd->add_option("name", logs.name, "a log file's name (as listed)");
  logs_cmd->add_option("--node", logs.node, "only this node (ID or its start)");
  auto* by_worker = logs_cmd->add_option("--worker", logs.worker, "the log of this worker (ID or its start)");
  auto* by_actor = logs_cmd->add_option("--actor", logs.actor, "the log of the worker running this actor");
  auto* by_task = logs_cmd->add_option("--task", logs.task, "the log of the worker that ran this task");
  auto* by_pod = logs_cmd->add_option("--pod", logs.pod,
                                      "the Kubernetes container log of this pod (its name, or its node's ID), "
                                      "then its node's orb log files; needs --config");
  logs_cmd->add_option("--config", logs.cluster_config, "the cluster YAML `orb up` used (for --pod)");
  by_worker->excludes(by_actor)->excludes(by_task)->excludes(by_pod);
  by_actor->excludes(by_task)->excludes(by_pod);
  by_task->excludes(by_pod);
  logs_cmd->add_flag("-f,--follow", logs.follow, "keep printing what is written");
  logs_cmd->add_option("--tail", logs.tail, "lines printed first (default 1000)")->check(CLI::PositiveNumber);
  logs_cmd->add_option("--address", logs.address, "GCS address (default: the local cluster)");
  logs_cmd->callback([&] { std::exit(logs.pod.empty() ? orb::cli::Logs(logs) : orb::cli::PodLogs(logs)); });

  std::string memory_address, memory_format = "table";
  auto* memory_cmd = app.add_subcommand("memory", "show each node's object store and the objects, by owner");
  memory_cmd->add_option("--address", memory_address, "GCS address (default: the local cluster)");
  memory_cmd->add_option("--format", memory_format, "table or json")->check(CLI::IsMember({"table", "json"}));
  memory_cmd->callback([&] { std::exit(orb::cli::Memory(memory_address, memory_format)); });

  std::string drain_node, drain_reason = "drained by orb drain-node", drain_address;
  auto* drain_cmd = app.add_subcommand(
      "drain-node", "stop a node taking work and move the objects it holds to other nodes, so it can be stopped");
  drain_cmd->add_option("node_id", drain_node, "the node's ID, or its start (see `orb list nodes`)")->required();
  drain_cmd->add_option("--reason", drain_reason, "why, for the node's log");
  drain_cmd->add_option("--address", drain_address, "GCS address (default: the local cluster)");
  drain_cmd->callback([&] { std::exit(orb::cli::DrainNode(drain_node, drain_reason, drain_address)); });

  orb::cli::StopOptions stop;
  auto* stop_cmd = app.add_subcommand(
      "stop", "stop the local clusters of this session root ($ORB_TEMP_DIR, default /tmp/orb-<uid>)");
  stop_cmd->add_flag("-f,--force", stop.force, "SIGKILL at once instead of SIGTERM first");
  stop_cmd->add_flag("--all", stop.all, "stop every orb process of this user on this machine");
  stop_cmd->add_option("--address", stop.address, "stop only the cluster whose GCS is at HOST:PORT");
  stop_cmd->callback([&] { std::exit(orb::cli::Stop(stop)); });

  CLI11_PARSE(app, argc, argv);
  return 0;
}

// orb: the command line. `orb start --head`, `orb start --address`, `orb status`,
// `orb list actors|placement-groups|objects`, `orb memory`, `orb stop`.
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

  std::string list_what, list_address, list_format = "table";
  auto* list_cmd = app.add_subcommand("list", "list a cluster table: actors, placement-groups, objects");
  list_cmd->add_option("what", list_what, "the table: actors, placement-groups or objects")
      ->required()
      ->check(CLI::IsMember({"actors", "placement-groups", "objects"}));
  list_cmd->add_option("--address", list_address, "GCS address (default: the local cluster)");
  list_cmd->add_option("--format", list_format, "table or json (objects only)")
      ->check(CLI::IsMember({"table", "json"}));
  list_cmd->callback([&] { std::exit(orb::cli::List(list_what, list_address, list_format)); });

  std::string memory_address, memory_format = "table";
  auto* memory_cmd = app.add_subcommand("memory", "show each node's object store and the objects, by owner");
  memory_cmd->add_option("--address", memory_address, "GCS address (default: the local cluster)");
  memory_cmd->add_option("--format", memory_format, "table or json")->check(CLI::IsMember({"table", "json"}));
  memory_cmd->callback([&] { std::exit(orb::cli::Memory(memory_address, memory_format)); });

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

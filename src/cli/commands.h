// The CLI's subcommands; each returns the process exit code.
#pragma once

#include <string>

#include "common/node_flags.h"

namespace orb::cli {

struct StartOptions {
  bool head = false;
  std::string address;
  std::string token;
  std::string autoscaling_config;  // head only: a YAML or JSON file with available_node_types
  NodeFlags node;
};

struct StopOptions {
  bool force = false;   // SIGKILL at once
  bool all = false;     // every orb process of this user
  std::string address;  // only the cluster at this GCS address
};

int Start(const StartOptions& options);
int Status(const std::string& address);
int Stop(const StopOptions& options);
// `orb list <what>`: actors, placement-groups.
int List(const std::string& what, const std::string& address);
// `given`, or the local cluster's address; empty (after saying so) when there is none.
std::string ResolveClusterAddress(const std::string& given, const std::string& command);

}  // namespace orb::cli

// The CLI's subcommands; each returns the process exit code.
#pragma once

#include <string>

namespace orb::cli {

struct StartOptions {
  bool head = false;
  std::string address;
  int port = 6379;
  double num_cpus = -1;
  double num_gpus = -1;
  double memory = 0;
  std::string resources;
  std::string labels;
  long long object_store_memory = 0;
  std::string node_ip = "127.0.0.1";
  std::string storage_dir;
  std::string token;
};

int Start(const StartOptions& options);
int Status(const std::string& address);
int Stop(bool force);
// `orb list <what>`: actors, placement-groups.
int List(const std::string& what, const std::string& address);
// `given`, or the local cluster's address; empty (after saying so) when there is none.
std::string ResolveClusterAddress(const std::string& given, const std::string& command);

}  // namespace orb::cli

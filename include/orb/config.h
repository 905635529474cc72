// orb::Config: how a program joins (or starts) a cluster. A plain struct; every field
// has a default.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "orb/runtime_env.h"

namespace orb {

// Whether an actor (or placement group) ends with the job that created it.
enum class ActorLifetime {
  NON_DETACHED,  // ends when the job that created it ends (the default)
  DETACHED,      // lives until killed (removed), beyond its creator
};

struct Config {
  // --- Which cluster ---
  // GCS address "HOST:PORT" of a running cluster (`orb start --head` prints it). Empty:
  // use $ORB_ADDRESS, or else start an embedded local cluster (a GCS and one raylet)
  // for this program and stop it at Shutdown().
  std::string address;
  // Cluster token. Empty: $ORB_TOKEN, or the token file of the local session that
  // serves `address`.
  std::string token;
  // Namespace for named things (actors, placement groups, KV keys).
  std::string ray_namespace;

  // --- This job's defaults ---
  // The lifetime of actors that do not set one (ActorCreator::SetLifetime).
  ActorLifetime default_actor_lifetime = ActorLifetime::NON_DETACHED;
  // The environment of this job's workers (env_vars, working_dir, code_search_path; see
  // <orb/runtime_env.h>); tasks and actors may add to it. Malformed: orb::RuntimeEnvError
  // from Init.
  std::optional<RuntimeEnv> runtime_env;

  // --- How workers run this job's code ---
  // Directories or shared libraries holding ORB_REMOTE functions. Empty: workers run
  // this program's own executable in worker mode.
  std::vector<std::string> code_search_path;
  // Workers each node starts for this job as soon as it learns of it (at Init, or when
  // the node joins later, as an autoscaled one does), at most the node's CPUs, so that
  // the first tasks there do not wait for a worker to start. Idle, they stop after the
  // node's idle worker timeout like any other. 0: none (workers start on demand).
  int prestart_workers = 0;

  // --- The embedded cluster only (ignored when connecting to a running one) ---
  // CPUs and GPUs to offer; a negative value means the machine's core count (for
  // GPUs: the devices found).
  double num_cpus = -1;
  double num_gpus = -1;
  std::map<std::string, double> resources;
  // Object store capacity in bytes; 0: 30% of the memory available at start, within
  // the free space of /dev/shm (as Ray). Pages are taken as objects need them.
  long long object_store_memory = 0;
  // Where session directories (logs, token) go; empty: $ORB_TEMP_DIR or /tmp/orb.
  std::string log_dir;
  // How long a request no node can satisfy waits before InfeasibleError, in ms.
  int infeasible_grace_ms = 3000;
  // Runs every task and actor in this process, on threads, with no cluster at all: for
  // debugging with gdb and sanitizers. Resources, placement and runtime environments
  // are checked but not applied; collectives need a cluster.
  bool local_mode = false;
  // Extra `orb start --head` flags for the embedded cluster, applied after the fields
  // above, e.g. {"--num-cpus", "2", "--resources", "{\"resource1\": 1}"}. Known:
  // --num-cpus, --num-gpus, --memory, --resources, --labels, --object-store-memory,
  // --object-spilling-directory, --object-spilling-threshold,
  // --node-ip-address, --port, --storage-dir, --worker-cgroups,
  // --memory-usage-threshold, --memory-monitor-interval-ms, --gpu-mps; another is an
  // orb::Error from Init.
  std::vector<std::string> head_args;
};

// Ray's name for it.
using OrbConfig = Config;

}  // namespace orb

#include "core/embedded_cluster.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/daemon_launcher.h"
#include "common/node_flags.h"
#include "common/process.h"
#include "common/session.h"

namespace fs = std::filesystem;

namespace orb {

absl::StatusOr<std::unique_ptr<EmbeddedCluster>> EmbeddedCluster::Start(const Config& config) {
  std::string gcs_bin = FindOrbBinary("gcs_server");
  std::string raylet_bin = FindOrbBinary("raylet");
  if (gcs_bin.empty() || raylet_bin.empty()) {
    return absl::NotFoundError("cannot find the gcs_server and raylet binaries (set ORB_BIN_DIR, or put them on PATH)");
  }
  if (!config.log_dir.empty()) ::setenv("ORB_TEMP_DIR", config.log_dir.c_str(), 1);
  auto session = CreateSessionDir(SessionKind::kEmbedded);
  if (!session.ok()) return session.status();
  std::unique_ptr<EmbeddedCluster> cluster(new EmbeddedCluster());
  cluster->session_dir_ = *session;
  cluster->token_ = GenerateToken();
  std::string token_file = *session + "/token";
  if (auto s = WriteStringToFile(token_file, cluster->token_, 0600); !s.ok()) return s;

  // The program's Config, then head_args on top (extra `orb start --head` flags).
  NodeFlags flags;
  flags.port = 0;
  flags.num_cpus = config.num_cpus;
  flags.num_gpus = config.num_gpus;
  flags.object_store_memory = config.object_store_memory;
  flags.infeasible_grace_ms = config.infeasible_grace_ms;
  if (!config.resources.empty()) flags.resources = nlohmann::json(config.resources).dump();
  if (auto s = ParseNodeFlags(config.head_args, &flags); !s.ok()) return s;

  auto gcs = StartDaemon(GcsArgs(flags, gcs_bin, *session, token_file, flags.storage_dir),
                         *session + "/logs/gcs_server.out", /*die_with_parent=*/true, std::chrono::seconds(20));
  if (!gcs.ok()) return gcs.status();
  cluster->gcs_pid_ = gcs->pid;
  cluster->gcs_address_ = gcs->address;
  WriteStringToFile(*session + "/address", gcs->address).IgnoreError();
  WriteStringToFile(*session + "/gcs.pid", std::to_string(gcs->pid)).IgnoreError();

  auto raylet = StartDaemon(RayletArgs(flags, RayletPlacement{raylet_bin, gcs->address, *session, token_file, "", /*head=*/true}), *session + "/logs/raylet.out", /*die_with_parent=*/true,
                            std::chrono::seconds(20));
  if (!raylet.ok()) return raylet.status();
  cluster->raylet_pid_ = raylet->pid;
  WriteStringToFile(*session + "/raylet.pid", std::to_string(raylet->pid)).IgnoreError();
  return cluster;
}

EmbeddedCluster::~EmbeddedCluster() {
  StopProcess(raylet_pid_, std::chrono::milliseconds(3000));
  StopProcess(gcs_pid_, std::chrono::milliseconds(2000));
}

}  // namespace orb

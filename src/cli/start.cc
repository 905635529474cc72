#include <filesystem>
#include <iostream>

#include "cli/autoscaling_config.h"
#include "cli/commands.h"
#include "common/process.h"
#include "common/daemon_launcher.h"
#include "common/id.h"
#include "common/session.h"

namespace orb::cli {
namespace {

int Fail(const std::string& why) {
  std::cerr << "orb start: " << why << "\n";
  return 1;
}

}  // namespace

int Start(const StartOptions& start) {
  const NodeFlags& o = start.node;
  if (start.head == !start.address.empty()) return Fail("give exactly one of --head or --address HOST:PORT");
  std::string gcs_bin = FindOrbBinary("gcs_server");
  std::string raylet_bin = FindOrbBinary("raylet");
  if (gcs_bin.empty() || raylet_bin.empty()) return Fail("cannot find the gcs_server and raylet binaries beside orb");

  std::string session;
  std::string token_file;
  std::string gcs_address = start.address;
  if (start.head) {
    auto dir = CreateSessionDir();
    if (!dir.ok()) return Fail(std::string(dir.status().message()));
    session = *dir;
    token_file = session + "/token";
    if (auto s = WriteStringToFile(token_file, start.token.empty() ? GenerateToken() : start.token, 0600); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    std::string storage = o.storage_dir.empty() ? session + "/storage" : o.storage_dir;
    auto gcs = StartDaemon(GcsArgs(o, gcs_bin, session, token_file, storage), session + "/logs/gcs_server.out", /*die_with_parent=*/false, std::chrono::seconds(30));
    if (!gcs.ok()) return Fail(std::string(gcs.status().message()));
    gcs_address = o.node_ip + ":" + gcs->address.substr(gcs->address.rfind(':') + 1);
    WriteStringToFile(session + "/address", gcs_address).IgnoreError();
    WriteStringToFile(session + "/gcs.pid", std::to_string(gcs->pid)).IgnoreError();
    if (!start.autoscaling_config.empty()) {
      auto token = ReadFileToString(token_file);
      absl::Status stored = StoreAutoscalingConfig(start.autoscaling_config, gcs_address, token.ok() ? *token : "");
      if (!stored.ok()) {
        StopProcess(gcs->pid, std::chrono::milliseconds(2000));
        return Fail(std::string(stored.message()));
      }
    }
  } else {
    if (!start.autoscaling_config.empty()) return Fail("--autoscaling-config belongs to the head (--head)");
    std::string host;
    int port;
    if (auto s = ParseAddress(start.address, &host, &port); !s.ok()) return Fail(std::string(s.message()));
    session = FindSessionForAddress(start.address);
    std::string token = start.token.empty() ? FindTokenForAddress(start.address) : start.token;
    if (session.empty()) {
      auto dir = CreateSessionDir();
      if (!dir.ok()) return Fail(std::string(dir.status().message()));
      session = *dir;
      WriteStringToFile(session + "/address", start.address).IgnoreError();
    }
    token_file = session + "/token";
    if (!token.empty()) WriteStringToFile(token_file, token, 0600).IgnoreError();
  }
  // Several raylets may share a session directory: each gets its own log files.
  std::string tag = NodeID::FromRandom().Hex().substr(0, 8);
  auto raylet = StartDaemon(RayletArgs(o, RayletPlacement{raylet_bin, gcs_address, session, token_file, tag}),
                            session + "/logs/raylet-" + tag + ".out",
                            /*die_with_parent=*/false, std::chrono::seconds(30));
  if (!raylet.ok()) return Fail(std::string(raylet.status().message()));

  if (start.head) {
    std::cout << "orb head node started.\n"
              << "  GCS address:  " << gcs_address << "\n"
              << "  raylet:       " << raylet->address << " (pid " << raylet->pid << ")\n"
              << "  session:      " << session << "\n\n"
              << "Connect a program:   ./app --orb-address=" << gcs_address << "   (or ORB_ADDRESS=" << gcs_address
              << ")\n"
              << "Add a node:          orb start --address " << gcs_address << "\n"
              << "Show the cluster:    orb status\n"
              << "Stop everything:     orb stop\n";
  } else {
    std::cout << "orb node started: raylet " << raylet->address << " (pid " << raylet->pid << ") joined the cluster at "
              << gcs_address << "\n";
  }
  return 0;
}

}  // namespace orb::cli

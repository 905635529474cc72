#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "common/daemon_launcher.h"
#include "common/id.h"
#include "common/session.h"

namespace orb::cli {
namespace {

std::vector<std::string> RayletArgs(const StartOptions& o, const std::string& raylet_bin, const std::string& gcs_address,
                                    const std::string& session, const std::string& token_file, const std::string& tag) {
  std::vector<std::string> argv = {raylet_bin, "--gcs-address", gcs_address, "--port", "0", "--session-dir", session,
                                   "--token-file", token_file, "--node-ip-address", o.node_ip,
                                   "--log-file", session + "/logs/raylet-" + tag + ".log"};
  if (o.node_ip != "127.0.0.1") argv.insert(argv.end(), {"--bind", "0.0.0.0"});
  if (o.num_cpus >= 0) argv.insert(argv.end(), {"--num-cpus", std::to_string(o.num_cpus)});
  if (o.num_gpus >= 0) argv.insert(argv.end(), {"--num-gpus", std::to_string(o.num_gpus)});
  if (o.memory > 0) argv.insert(argv.end(), {"--memory", std::to_string(o.memory)});
  if (!o.resources.empty()) argv.insert(argv.end(), {"--resources", o.resources});
  if (!o.labels.empty()) argv.insert(argv.end(), {"--labels", o.labels});
  if (o.object_store_memory > 0) argv.insert(argv.end(), {"--object-store-memory", std::to_string(o.object_store_memory)});
  return argv;
}

int Fail(const std::string& why) {
  std::cerr << "orb start: " << why << "\n";
  return 1;
}

}  // namespace

int Start(const StartOptions& o) {
  if (o.head == !o.address.empty()) return Fail("give exactly one of --head or --address HOST:PORT");
  std::string gcs_bin = FindOrbBinary("gcs_server");
  std::string raylet_bin = FindOrbBinary("raylet");
  if (gcs_bin.empty() || raylet_bin.empty()) return Fail("cannot find the gcs_server and raylet binaries beside orb");

  std::string session;
  std::string token_file;
  std::string gcs_address = o.address;
  if (o.head) {
    auto dir = CreateSessionDir();
    if (!dir.ok()) return Fail(std::string(dir.status().message()));
    session = *dir;
    token_file = session + "/token";
    if (auto s = WriteStringToFile(token_file, o.token.empty() ? GenerateToken() : o.token, 0600); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    std::string storage = o.storage_dir.empty() ? session + "/storage" : o.storage_dir;
    std::vector<std::string> argv = {gcs_bin, "--port", std::to_string(o.port), "--token-file", token_file,
                                     "--storage-dir", storage, "--log-file", session + "/logs/gcs_server.log"};
    if (o.node_ip != "127.0.0.1") argv.insert(argv.end(), {"--bind", "0.0.0.0", "--node-ip-address", o.node_ip});
    auto gcs = StartDaemon(argv, session + "/logs/gcs_server.out", /*die_with_parent=*/false, std::chrono::seconds(30));
    if (!gcs.ok()) return Fail(std::string(gcs.status().message()));
    gcs_address = o.node_ip + ":" + gcs->address.substr(gcs->address.rfind(':') + 1);
    WriteStringToFile(session + "/address", gcs_address).IgnoreError();
    WriteStringToFile(session + "/gcs.pid", std::to_string(gcs->pid)).IgnoreError();
  } else {
    std::string host;
    int port;
    if (auto s = ParseAddress(o.address, &host, &port); !s.ok()) return Fail(std::string(s.message()));
    session = FindSessionForAddress(o.address);
    std::string token = o.token.empty() ? FindTokenForAddress(o.address) : o.token;
    if (session.empty()) {
      auto dir = CreateSessionDir();
      if (!dir.ok()) return Fail(std::string(dir.status().message()));
      session = *dir;
      WriteStringToFile(session + "/address", o.address).IgnoreError();
    }
    token_file = session + "/token";
    if (!token.empty()) WriteStringToFile(token_file, token, 0600).IgnoreError();
  }
  // Several raylets may share a session directory: each gets its own log files.
  std::string tag = NodeID::FromRandom().Hex().substr(0, 8);
  auto raylet = StartDaemon(RayletArgs(o, raylet_bin, gcs_address, session, token_file, tag),
                            session + "/logs/raylet-" + tag + ".out",
                            /*die_with_parent=*/false, std::chrono::seconds(30));
  if (!raylet.ok()) return Fail(std::string(raylet.status().message()));

  if (o.head) {
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

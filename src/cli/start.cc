#include <filesystem>
#include <iostream>

#include "autoscaler/cluster_config.h"
#include "cli/autoscaling_config.h"
#include "cli/commands.h"
#include "common/process.h"
#include "common/rpc.h"
#include "gcs_service.grpc.pb.h"
#include "common/daemon_launcher.h"
#include "common/id.h"
#include "common/session.h"

namespace orb::cli {
namespace {

// "  dashboard:    http://HOST:PORT/?token=T\n", or "" when the head serves none.
std::string DashboardLine(const std::string& gcs_address, const std::string& token_file) {
  auto token = ReadFileToString(token_file);
  RpcClient<rpc::GcsService> gcs(gcs_address, token.ok() ? *token : "");
  CallOptions call;
  call.timeout = std::chrono::milliseconds(3000);
  auto metrics = gcs.CallSync<rpc::GetMetricsReply>(ORB_RPC(GetMetrics), rpc::GetMetricsRequest(), call);
  if (!metrics.ok() || metrics->dashboard_port() <= 0) return "";
  std::string url = "http://" + gcs_address.substr(0, gcs_address.rfind(':')) + ":" +
                    std::to_string(metrics->dashboard_port()) + "/";
  return "  dashboard:    " + url + (token.ok() && !token->empty() ? "?token=" + *token : "") + "\n";
}

int Fail(const std::string& why) {
  std::cerr << "orb start: " << why << "\n";
  return 1;
}

// The cluster YAML the autoscaler will run with, checked now so that a mistake is
// reported by `orb start` itself.
absl::Status CheckAutoscaleConfig(const StartOptions& start) {
  if (!start.autoscale_config_env.empty()) {
    const char* text = std::getenv(start.autoscale_config_env.c_str());
    if (!text) return absl::InvalidArgumentError("$" + start.autoscale_config_env + " is not set");
    return autoscaler::ParseClusterConfig(text, "$" + start.autoscale_config_env).status();
  }
  return autoscaler::LoadClusterConfig(start.autoscale_config).status();
}

absl::StatusOr<pid_t> StartAutoscaler(const StartOptions& start, const std::string& gcs_address,
                                      const std::string& session, const std::string& token_file) {
  std::string bin = FindOrbBinary("orb_autoscaler");
  if (bin.empty()) return absl::NotFoundError("cannot find the orb_autoscaler binary beside orb");
  ProcessOptions p;
  p.argv = {bin, "--address", gcs_address, "--token-file", token_file, "--session-dir", session,
            "--log-file", session + "/logs/autoscaler.log"};
  if (!start.autoscale_config_env.empty()) {
    p.argv.insert(p.argv.end(), {"--config-env", start.autoscale_config_env});
  } else {
    p.argv.insert(p.argv.end(), {"--config", std::filesystem::absolute(start.autoscale_config).string()});
  }
  p.output_path = session + "/logs/autoscaler.out";
  p.new_process_group = true;
  p.die_with_parent = start.block;
  auto pid = SpawnProcess(p);
  if (pid.ok()) WriteStringToFile(session + "/autoscaler.pid", std::to_string(*pid)).IgnoreError();
  return pid;
}

// `--block`: waits for a termination signal or for the raylet (or GCS) to end, then
// stops what this command started, autoscaler first.
int Block(const std::vector<pid_t>& stop_order, pid_t raylet, pid_t gcs) {
  while (true) {
    int sig = WaitForTerminationSignalFor(std::chrono::milliseconds(200));
    if (sig != 0) {
      std::cout << "orb start: stopping on signal " << sig << std::endl;
      break;
    }
    if (!IsProcessAlive(raylet)) {
      std::cerr << "orb start: the raylet exited" << std::endl;
      break;
    }
    if (gcs > 0 && !IsProcessAlive(gcs)) {
      std::cerr << "orb start: the GCS exited" << std::endl;
      break;
    }
  }
  for (pid_t pid : stop_order) {
    if (pid > 0) StopProcess(pid, std::chrono::milliseconds(10000));
  }
  return 0;
}

}  // namespace

int Start(const StartOptions& start) {
  const NodeFlags& o = start.node;
  if (start.head == !start.address.empty()) return Fail("give exactly one of --head or --address HOST:PORT");
  const bool autoscale = !start.autoscale_config.empty() || !start.autoscale_config_env.empty();
  if (autoscale && !start.head) return Fail("--autoscale-config belongs to the head (--head)");
  if (autoscale) {
    if (auto s = CheckAutoscaleConfig(start); !s.ok()) return Fail(std::string(s.message()));
  }
  // --block: the daemons stop with this process; signals are waited for, not delivered.
  if (start.block) BlockTerminationSignals();
  std::string gcs_bin = FindOrbBinary("gcs_server");
  std::string raylet_bin = FindOrbBinary("raylet");
  if (gcs_bin.empty() || raylet_bin.empty()) return Fail("cannot find the gcs_server and raylet binaries beside orb");

  std::string session;
  std::string token_file;
  std::string gcs_address = start.address;
  pid_t gcs_pid = 0;
  pid_t autoscaler_pid = 0;
  if (start.head) {
    auto dir = CreateSessionDir();
    if (!dir.ok()) return Fail(std::string(dir.status().message()));
    session = *dir;
    token_file = session + "/token";
    // The token: --token, else $ORB_TOKEN (a head pod's, from the cluster's Secret), else a new one.
    const char* env_token = std::getenv("ORB_TOKEN");
    std::string token = !start.token.empty() ? start.token : (env_token && *env_token ? env_token : GenerateToken());
    if (auto s = WriteStringToFile(token_file, token, 0600); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    std::string storage = o.storage_dir.empty() ? session + "/storage" : o.storage_dir;
    auto gcs = StartDaemon(GcsArgs(o, gcs_bin, session, token_file, storage), session + "/logs/gcs_server.out",
                           /*die_with_parent=*/start.block, std::chrono::seconds(30));
    if (!gcs.ok()) return Fail(std::string(gcs.status().message()));
    gcs_pid = gcs->pid;
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
  auto raylet = StartDaemon(RayletArgs(o, RayletPlacement{raylet_bin, gcs_address, session, token_file, tag, start.head}),
                            session + "/logs/raylet-" + tag + ".out",
                            /*die_with_parent=*/start.block, std::chrono::seconds(30));
  if (!raylet.ok()) {
    if (start.block && gcs_pid > 0) StopProcess(gcs_pid, std::chrono::milliseconds(5000));
    return Fail(std::string(raylet.status().message()));
  }
  if (autoscale) {
    auto pid = StartAutoscaler(start, gcs_address, session, token_file);
    if (!pid.ok()) return Fail("cannot start the autoscaler: " + pid.status().ToString());
    autoscaler_pid = *pid;
  }

  if (start.head) {
    std::cout << "orb head node started.\n"
              << "  GCS address:  " << gcs_address << "\n"
              << DashboardLine(gcs_address, token_file)
              << "  raylet:       " << raylet->address << " (pid " << raylet->pid << ")\n"
              << "  session:      " << session << "\n\n"
              << "Connect a program:   ./app --orb-address=" << gcs_address << "   (or ORB_ADDRESS=" << gcs_address
              << ")\n"
              << "Add a node:          orb start --address " << gcs_address << "\n"
              << "Show the cluster:    orb status\n"
              << "Stop everything:     orb stop\n";
    if (autoscale) std::cout << "  autoscaler:   pid " << autoscaler_pid << " (logs/autoscaler.log)\n";
  } else {
    std::cout << "orb node started: raylet " << raylet->address << " (pid " << raylet->pid << ") joined the cluster at "
              << gcs_address << "\n";
  }
  std::cout.flush();
  if (start.block) return Block({autoscaler_pid, raylet->pid, gcs_pid}, raylet->pid, gcs_pid);
  return 0;
}

}  // namespace orb::cli

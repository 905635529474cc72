// orb_autoscaler: runs on the head, started by `orb start --head --autoscale-config`
// (and so by `orb up` and the head pod). Reads the cluster config, keeps the node types
// in the GCS (so raylets let work wait for a node), and runs Autoscaler::Update every
// update_interval until SIGTERM.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "autoscaler/autoscaler.h"
#include "autoscaler/provider_factory.h"
#include "common/logging.h"
#include "common/node_types.h"
#include "common/process.h"
#include "common/rpc.h"
#include "common/session.h"
#include "gcs_service.grpc.pb.h"

namespace orb::autoscaler {
namespace {

absl::Status StoreNodeTypes(const ClusterConfig& config, const std::string& gcs_address, const std::string& token) {
  RpcClient<rpc::GcsService> gcs(gcs_address, token);
  rpc::KvPutRequest put;
  put.set_namespace_(kNodeTypesKvNamespace);
  put.set_key(kNodeTypesKvKey);
  put.set_value(config.NodeTypesJson());
  put.set_overwrite(true);
  return gcs.CallSync<rpc::KvPutReply>(ORB_RPC(KvPut), put, CallOptions::RetriedFor(std::chrono::seconds(30))).status();
}

int Main(int argc, char** argv) {
  BlockTerminationSignals();
  CLI::App app{"orb_autoscaler: adds and removes nodes of an orb cluster"};
  std::string address, config_path, config_env, token_file, session_dir, log_file;
  app.add_option("--address", address, "the GCS address HOST:PORT")->required();
  app.add_option("--config", config_path, "the cluster YAML");
  app.add_option("--config-env", config_env, "or: the environment variable holding the cluster YAML");
  app.add_option("--token-file", token_file, "file holding the cluster token");
  app.add_option("--session-dir", session_dir, "the session directory (local nodes' records and logs)");
  app.add_option("--log-file", log_file, "log here instead of stderr");
  double speedup = 1;
  app.add_option("--clock-speedup", speedup,
                 "run the autoscaler's clock this many times faster than real time (tests and demos of the "
                 "metric rules: 60 makes a 5-minute rule fire in 5 s)")
      ->envname("ORB_AUTOSCALER_CLOCK_SPEEDUP")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  InitLogging("autoscaler", log_file);
  auto fail = [](const std::string& why) {
    std::cerr << "orb_autoscaler: " << why << std::endl;
    spdlog::error("{}", why);
    return 1;
  };

  absl::StatusOr<ClusterConfig> config;
  std::string yaml_text;
  if (!config_env.empty()) {
    const char* text = std::getenv(config_env.c_str());
    if (!text) return fail("$" + config_env + " is not set");
    yaml_text = text;
    config = ParseClusterConfig(yaml_text, "$" + config_env);
  } else if (!config_path.empty()) {
    config = LoadClusterConfig(config_path);
  } else {
    return fail("give --config FILE or --config-env VAR");
  }
  if (!config.ok()) return fail(std::string(config.status().message()));
  std::string token;
  if (!token_file.empty()) {
    auto t = ReadFileToString(token_file);
    if (!t.ok()) return fail(std::string(t.status().message()));
    token = *t;
  } else if (const char* t = std::getenv("ORB_TOKEN")) {
    token = t;
  }
  if (auto s = StoreNodeTypes(*config, address, token); !s.ok()) return fail("cannot reach the GCS: " + s.ToString());

  ProviderPlacement where;
  where.gcs_address = address;
  where.token = token;
  where.state_dir = (session_dir.empty() ? TempRoot() : session_dir) + "/autoscaler";
  auto provider = NewNodeProvider(*config, where);
  if (!provider.ok()) return fail(std::string(provider.status().message()));
  auto cluster = NewGcsClusterState(address, token);
  std::unique_ptr<UtilisationSource> utilisation;
  if (config->metric_rules.prometheus) {
    auto source = NewPrometheusSource(*config->metric_rules.prometheus);
    if (!source.ok()) return fail(std::string(source.status().message()));
    utilisation = std::move(*source);
  }
  AutoscalerOptions options;
  options.config = *config;
  const auto started = std::chrono::steady_clock::now();
  Clock clock = [started, speedup] {
    auto real = std::chrono::steady_clock::now() - started;
    return started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(real * speedup);
  };
  Autoscaler autoscaler(options, provider->get(), cluster.get(), clock, utilisation.get());
  spdlog::info("autoscaler for cluster {} ({} provider) started; GCS {}", config->cluster_name, config->provider.type,
               address);
  std::cout << "autoscaler running for cluster " << config->cluster_name << std::endl;

  std::atomic<bool> stopping{false};
  std::thread signals([&] {
    int sig = WaitForTerminationSignal();
    spdlog::info("autoscaler stopping on signal {}", sig);
    stopping = true;
  });
  while (!stopping) {
    autoscaler.Update().IgnoreError();
    auto until = std::chrono::steady_clock::now() + config->update_interval;
    while (!stopping && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  signals.join();
  return 0;
}

}  // namespace
}  // namespace orb::autoscaler

int main(int argc, char** argv) { return orb::autoscaler::Main(argc, argv); }

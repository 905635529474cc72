// gcs_server: the global control store of one orb cluster.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <future>
#include <iostream>

#include "common/http_endpoint.h"
#include "common/logging.h"
#include "dashboard/dashboard.h"
#include "common/node_flags.h"
#include "common/process.h"
#include "common/call_stream_routes.h"
#include "common/rpc_server.h"
#include "common/session.h"
#include "gcs/gcs_grpc_service.h"
#include "gcs/gcs_handler.h"
#include "gcs/space_guarded_table_store.h"
#include "gossip/gossip_flags.h"
#include "gossip/grpc_transport.h"
#include "gcs_service.grpc.pb.h"

namespace orb::gcs {


int Main(int argc, char** argv) {
  // The GCS's tables (actor creation arguments, the KV store) and logs are this user's
  // alone, wherever --storage-dir puts them.
  ::umask(077);
  BlockTerminationSignals();
  CLI::App app{"orb global control store"};
  int port = 6379;
  std::string bind = "127.0.0.1";
  std::string storage_dir;
  std::string token_file;
  std::string log_file;
  std::string node_ip;
  uint64_t min_free_disk = kDefaultMinFreeDiskBytes;
  int64_t max_message_bytes = kDefaultMaxMessageBytes;
  size_t max_dead_actors = 10000;
  int metrics_export_port = -1;
  int dashboard_port = -1;
  std::string dashboard_token_file;
  app.add_option("--port", port, "port to serve on (0 picks a free one)")->check(CLI::Range(0, 65535));
  app.add_option("--bind", bind, "address to bind (default loopback only)");
  app.add_option("--storage-dir", storage_dir, "RocksDB directory; empty keeps tables in memory");
  app.add_option("--min-free-disk-bytes", min_free_disk,
                 "with --storage-dir: refuse writes (and to start) when less is free there (default 64 MiB)");
  app.add_option("--max-message-bytes", max_message_bytes, "largest RPC request accepted, bytes (default 64 MiB)")
      ->check(CLI::Range(int64_t{1} << 20, (int64_t{1} << 31) - 1));
  app.add_option("--max-dead-actors", max_dead_actors, "dead actors kept for lookups; older ones are forgotten")
      ->check(CLI::PositiveNumber);
  app.add_option("--metrics-export-port", metrics_export_port,
                 "Prometheus /metrics port (default -1: a free one, reported by GetMetrics; 0: none)")
      ->check(CLI::Range(-1, 65535));
  app.add_option("--dashboard-port", dashboard_port,
                 "the web dashboard's port (default -1: a free one, reported by GetMetrics and `orb start`; 0: none)")
      ->check(CLI::Range(-1, 65535));
  app.add_option("--dashboard-token-file", dashboard_token_file,
                 "a file holding a read-only token the dashboard also accepts (the cluster token always works)");
  app.add_option("--token-file", token_file, "file holding the cluster token; empty disables authentication");
  app.add_option("--log-file", log_file, "log here instead of stderr");
  app.add_option("--node-ip-address", node_ip, "address raylets reach this GCS at (default: --bind)");
  gossip::GossipFlagValues gossip_flags;
  gossip::AddGossipFlags(app, &gossip_flags);
  CLI11_PARSE(app, argc, argv);
  InitLogging("gcs_server", log_file);

  std::string token;
  if (!token_file.empty()) {
    auto t = ReadFileToString(token_file);
    if (!t.ok()) {
      std::cerr << "gcs_server: " << t.status().message() << "\n";
      return 2;
    }
    token = *t;
  }
  std::unique_ptr<TableStore> store;
  if (storage_dir.empty()) {
    store = NewInMemoryTableStore();
  } else {
    std::error_code ec;
    std::filesystem::create_directories(storage_dir, ec);
    if (ec) {
      std::cerr << "gcs_server: cannot create the storage directory " << storage_dir << ": " << ec.message() << "\n";
      return 2;
    }
    // Refuse to start on a full disk: the database would fail (and abort) on its first write.
    SpaceGuardedTableStore probe(nullptr, storage_dir, min_free_disk);
    if (auto s = probe.CheckSpace(); !s.ok()) {
      std::cerr << "gcs_server: " << s.message() << "\n";
      return 2;
    }
    auto opened = OpenRocksDbTableStore(storage_dir);
    if (!opened.ok()) {
      std::cerr << "gcs_server: " << opened.status().message() << "\n";
      return 2;
    }
    store = std::make_unique<SpaceGuardedTableStore>(std::move(*opened), storage_dir, min_free_disk);
  }
  EventLoop loop;
  GcsOptions options;
  options.gossip = gossip::ToGossipOptions(gossip_flags);
  options.token = token;
  options.max_dead_actors = max_dead_actors;
  auto handler = GcsHandler::Create(std::move(store), &loop, options);
  if (!handler.ok()) {
    std::cerr << "gcs_server: " << handler.status().message() << "\n";
    return 2;
  }
  GcsGrpcService service(handler->get(), ServiceContext{&loop, token});
  gossip::GossipGrpcService gossip_service(
      [h = handler->get()](const std::string& bytes) { return h->DeliverGossip(bytes); }, ServiceContext{&loop, token});
  auto server = StartServer(bind, port, {&service, &gossip_service}, "", ServerLimits{max_message_bytes});
  if (!server.ok()) {
    std::cerr << "gcs_server: " << server.status().message() << "\n";
    return 2;
  }
  // The same methods over the call stream, for clients that route hot ones there
  // (placement groups, actors); without it they all use gRPC.
  absl::StatusOr<std::unique_ptr<RouteStreamServer>> routes = absl::UnavailableError("ORB_CONTROL_CALL_STREAM=0");
  if (ControlCallStreamEnabled()) {
    routes = RouteStreamServer::Start(bind, {&service}, token, ServerLimits{max_message_bytes});
    if (!routes.ok()) spdlog::warn("gcs_server: no call stream ({}); clients use gRPC", routes.status().ToString());
  }
  auto metrics = ServeMetrics(bind, metrics_export_port, [&loop, h = handler->get()]() -> absl::StatusOr<std::string> {
    auto text = RunOnLoop(&loop, [h] { return h->MetricsText(); }, std::chrono::seconds(5));
    if (!text) return absl::UnavailableError("the GCS did not answer within 5 s");
    return std::move(*text);
  });
  if (!metrics.ok()) {
    std::cerr << "gcs_server: --metrics-export-port: " << metrics.status().message() << "\n";
    return 2;
  }
  if (node_ip.empty()) node_ip = bind;
  std::unique_ptr<HttpEndpoint> dashboard;
  if (dashboard_port != 0) {
    DashboardOptions dashboard_options{node_ip + ":" + std::to_string(server->port), token, ""};
    if (!dashboard_token_file.empty()) {
      auto read_only = ReadFileToString(dashboard_token_file);
      if (!read_only.ok()) {
        std::cerr << "gcs_server: --dashboard-token-file: " << read_only.status().message() << "\n";
        return 2;
      }
      dashboard_options.read_only_token = *read_only;
    }
    dashboard = std::make_unique<HttpEndpoint>();
    AddDashboardRoutes(dashboard.get(), dashboard_options);
    if (auto bound = dashboard->Start(bind, dashboard_port < 0 ? 0 : dashboard_port); !bound.ok()) {
      std::cerr << "gcs_server: --dashboard-port: " << bound.status().message() << "\n";
      return 2;
    }
  }
  gossip::GrpcGossipTransport gossip_transport(token, options.gossip.probe_timeout);
  std::promise<void> joined;
  loop.Post([&] {
    if (*metrics) (*handler)->set_metrics_export_port((*metrics)->port());
    if (dashboard) (*handler)->set_dashboard_port(dashboard->port());
    if (routes.ok()) (*handler)->set_call_stream_port((*routes)->port());
    (*handler)->StartGossip(node_ip + ":" + std::to_string(server->port), &gossip_transport);
    joined.set_value();
  });
  loop.Start();
  joined.get_future().wait();
  // The port line is how a parent learns a port picked with --port 0.
  std::cout << "gcs_server listening on " << bind << ":" << server->port << std::endl;
  spdlog::info("gcs_server listening on {}:{} (storage: {})", bind, server->port,
               storage_dir.empty() ? "memory" : storage_dir);
  int sig = WaitForTerminationSignal();
  spdlog::info("gcs_server stopping on signal {}", sig);
  // Shared: after a wait that timed out, the closure may still run.
  auto answered = std::make_shared<std::promise<void>>();
  loop.Post([&handler, answered] {
    (*handler)->AnswerParkedCalls();
    answered->set_value();
  });
  answered->get_future().wait_for(std::chrono::seconds(1));
  if (*metrics) (*metrics)->Stop();
  if (dashboard) dashboard->Stop();
  server->server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  if (routes.ok()) routes->reset();  // its thread posts to the loop
  loop.Stop();
  loop.Join();  // before the handler and services it calls into are destroyed
  return 0;
}

}  // namespace orb::gcs

int main(int argc, char** argv) { return orb::gcs::Main(argc, argv); }

// `orb logs`: the cluster's log files (each node's <session>/logs), read through the
// raylets: list them, or print (and follow) one, found by name or by the worker, actor
// or task whose process wrote it.
#include <chrono>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "common/client_pool.h"
#include "common/rpc.h"
#include "common/session.h"
#include "common/state_client.h"
#include "raylet_service.grpc.pb.h"

namespace orb::cli {
namespace {

CallOptions Quick() {
  CallOptions call;
  call.timeout = std::chrono::milliseconds(5000);
  return call;
}

// The one row of `kind` whose `column` starts with `prefix`; an error naming what is
// wrong otherwise.
absl::StatusOr<nlohmann::json> FindOne(const std::string& address, const std::string& token, const std::string& kind,
                                       const std::string& column, const std::string& prefix) {
  auto listing = QueryState(address, token, StateQuery{kind, {}, 0});
  if (!listing.ok()) return listing.status();
  std::vector<nlohmann::json> found;
  for (auto& row : listing->rows) {
    if (row[column].get<std::string>().rfind(prefix, 0) == 0) found.push_back(row);
  }
  std::string what = kind.substr(0, kind.size() - 1);
  if (found.empty()) return absl::NotFoundError("no " + what + " with ID " + prefix);
  if (kind == "tasks") return found.front();  // the newest attempt
  if (found.size() > 1) return absl::InvalidArgumentError("more than one " + what + " has an ID starting " + prefix);
  return found.front();
}

}  // namespace

int Logs(const LogsOptions& o) {
  std::string address = ResolveClusterAddress(o.address, "logs");
  if (address.empty()) return 1;
  std::string token = FindTokenForAddress(address);
  auto fail = [](const std::string& why) {
    std::cerr << "orb logs: " << why << "\n";
    return 1;
  };
  std::string node = o.node, name = o.name;
  // A worker's, an actor's or a task's process: its node and its log file.
  std::string worker;
  if (!o.actor.empty() || !o.task.empty()) {
    auto row = o.actor.empty() ? FindOne(address, token, "tasks", "task_id", o.task)
                               : FindOne(address, token, "actors", "actor_id", o.actor);
    if (!row.ok()) return fail(std::string(row.status().message()));
    worker = (*row)["worker_id"].get<std::string>();
    node = (*row)["node_id"].get<std::string>();
    if (worker.empty()) return fail("it has not run on a worker (yet)");
  } else if (!o.worker.empty()) {
    auto row = FindOne(address, token, "workers", "worker_id", o.worker);
    if (!row.ok()) return fail(std::string(row.status().message()));
    worker = (*row)["worker_id"].get<std::string>();
    node = (*row)["node_id"].get<std::string>();
  }
  if (!worker.empty()) name = "worker-" + worker.substr(0, 12) + ".log";

  auto nodes = QueryState(address, token, StateQuery{"nodes", {"state=ALIVE"}, 0});
  if (!nodes.ok()) return fail(std::string(nodes.status().message()));
  ClientPool<rpc::RayletService> raylets(token);
  // Every live node (or the one asked for) with its files.
  std::vector<std::pair<std::string, std::shared_ptr<RpcClient<rpc::RayletService>>>> targets;
  for (const auto& n : nodes->rows) {
    std::string id = n["node_id"];
    if (!node.empty() && id.rfind(node, 0) != 0) continue;
    targets.emplace_back(id, raylets.Get(n["ip"].get<std::string>() + ":" + std::to_string(n["raylet_port"].get<int>())));
  }
  if (targets.empty()) return fail(node.empty() ? "no live node" : "no live node with ID " + node);

  if (name.empty()) {  // list
    for (const auto& [id, raylet] : targets) {
      auto files = raylet->CallSync<rpc::ListLogsReply>(ORB_RPC(ListLogs), rpc::ListLogsRequest(), Quick());
      if (!files.ok()) {
        std::cerr << "orb logs: node " << id << " did not answer: " << files.status().message() << "\n";
        continue;
      }
      std::cout << "node " << id << "\n";
      for (const auto& f : files->files()) std::cout << "  " << f.name() << " (" << f.size() << " bytes)\n";
    }
    return 0;
  }
  // The node that has the file: the one named, or the first that has it.
  std::shared_ptr<RpcClient<rpc::RayletService>> holder;
  rpc::ReadLogReply first;
  for (const auto& [id, raylet] : targets) {
    rpc::ReadLogRequest request;
    request.set_name(name);
    request.set_offset(-(1 << 20));
    request.set_max_bytes(1 << 20);
    auto read = raylet->CallSync<rpc::ReadLogReply>(ORB_RPC(ReadLog), request, Quick());
    if (read.ok()) {
      holder = raylet;
      first = std::move(*read);
      break;
    }
    if (!absl::IsNotFound(read.status())) return fail(std::string(read.status().message()));
  }
  if (!holder) return fail("no node has a log file '" + name + "' (orb logs lists them)");
  // The last --tail lines of what was read.
  const std::string& data = first.data();
  size_t start = data.size();
  for (int lines = 0; start > 0; --start) {
    if (data[start - 1] == '\n' && start != data.size() && ++lines >= o.tail) break;
  }
  std::cout << data.substr(start) << std::flush;
  int64_t offset = first.next_offset();
  while (o.follow) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    rpc::ReadLogRequest request;
    request.set_name(name);
    request.set_offset(offset);
    request.set_max_bytes(1 << 20);
    auto read = holder->CallSync<rpc::ReadLogReply>(ORB_RPC(ReadLog), request, Quick());
    if (!read.ok()) return fail(std::string(read.status().message()));
    std::cout << read->data() << std::flush;
    offset = read->next_offset();
  }
  return 0;
}

}  // namespace orb::cli

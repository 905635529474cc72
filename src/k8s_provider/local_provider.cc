#include "k8s_provider/local_provider.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/process.h"
#include "common/session.h"
#include "k8s_provider/pod_template.h"

namespace orb {
namespace {

std::string RandomSuffix() {
  static const char* kChars = "bcdfghjklmnpqrstvwxz2456789";  // as Kubernetes' generateName
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 5; ++i) s += kChars[rd() % 27];
  return s;
}

// The process `pid` is the node `id` (and not another that reused the pid).
bool IsNodeProcess(int pid, const std::string& id) {
  if (pid <= 0 || !IsProcessAlive(pid)) return false;
  auto cmdline = ReadFileToString("/proc/" + std::to_string(pid) + "/cmdline");
  return cmdline.ok() && cmdline->find(id) != std::string::npos;
}

}  // namespace

LocalProvider::LocalProvider(LocalProviderOptions options) : options_(std::move(options)) {
  std::error_code ec;
  std::filesystem::create_directories(options_.state_dir + "/nodes", ec);
  std::filesystem::create_directories(options_.state_dir + "/logs", ec);
}

std::string LocalProvider::RecordPath(const std::string& id) const { return options_.state_dir + "/nodes/" + id + ".json"; }

std::vector<LocalProvider::Record> LocalProvider::ReadRecords() const {
  std::vector<Record> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.state_dir + "/nodes", ec)) {
    auto text = ReadFileToString(entry.path());
    if (!text.ok()) continue;
    auto json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object()) continue;
    Record r;
    r.node.id = json.value("id", "");
    r.node.node_type = json.value("node_type", "");
    r.node.kind = json.value("kind", "worker") == "head" ? NodeKind::kHead : NodeKind::kWorker;
    r.node.launch_request = json.value("launch_request", "");
    r.pid = json.value("pid", 0);
    if (!r.node.id.empty()) out.push_back(std::move(r));
  }
  return out;
}

absl::Status LocalProvider::CreateNodes(const NodeLaunch& launch) {
  auto type = options_.node_types.find(launch.node_type);
  if (type == options_.node_types.end()) {
    return absl::InvalidArgumentError("no node type '" + launch.node_type + "' in the local provider's config");
  }
  int made = 0;
  for (const auto& r : ReadRecords()) made += r.node.launch_request == launch.request_id ? 1 : 0;
  for (int i = made; i < launch.count; ++i) {
    std::string id = absl::StrCat(options_.cluster_name, "-", launch.node_type, "-", RandomSuffix());
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [k, v] : type->second.labels) labels[k] = v;
    for (const auto& [k, v] : launch.labels) labels[k] = v;
    labels[kLabelNodeType] = launch.node_type;
    labels[kLabelProviderNodeId] = id;
    labels[kLabelCluster] = options_.cluster_name;
    ProcessOptions p;
    p.argv = {options_.orb_binary, "start", "--block", "--address", options_.gcs_address};
    for (auto& f : ResourceFlags(type->second.resources)) p.argv.push_back(std::move(f));
    p.argv.insert(p.argv.end(), {"--labels", labels.dump()});
    if (!options_.token.empty()) p.env["ORB_TOKEN"] = options_.token;
    p.output_path = options_.state_dir + "/logs/" + id + ".out";
    p.new_process_group = true;
    auto pid = SpawnProcess(p);
    if (!pid.ok()) return absl::UnavailableError("cannot start a local node: " + pid.status().ToString());
    nlohmann::json record = {{"id", id},
                             {"node_type", launch.node_type},
                             {"kind", NodeKindName(launch.kind)},
                             {"launch_request", launch.request_id},
                             {"pid", *pid}};
    if (auto s = WriteStringToFile(RecordPath(id), record.dump(), 0600); !s.ok()) return s;
    spdlog::info("started local node {} (type {}, pid {})", id, launch.node_type, *pid);
  }
  return absl::OkStatus();
}

absl::Status LocalProvider::TerminateNodes(const std::vector<std::string>& ids) {
  auto records = ReadRecords();
  for (const auto& id : ids) {
    for (const auto& r : records) {
      if (r.node.id != id) continue;
      if (IsNodeProcess(r.pid, id)) ::kill(r.pid, SIGTERM);  // `orb start --block` stops its raylet
      spdlog::info("terminated local node {} (pid {})", id, r.pid);
    }
    std::error_code ec;
    std::filesystem::remove(RecordPath(id), ec);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ProviderNode>> LocalProvider::ListNodes() {
  int status;
  while (ReapAnyChild(&status) > 0) {
  }
  std::vector<ProviderNode> out;
  for (auto& r : ReadRecords()) {
    if (IsNodeProcess(r.pid, r.node.id)) {
      r.node.state = ProviderNodeState::kRunning;
      r.node.ip = "127.0.0.1";
    } else {
      r.node.state = ProviderNodeState::kFailed;
      r.node.failure = absl::StrCat("its process (pid ", r.pid, ") exited; see ", options_.state_dir, "/logs/",
                                    r.node.id, ".out");
    }
    out.push_back(std::move(r.node));
  }
  return out;
}

}  // namespace orb

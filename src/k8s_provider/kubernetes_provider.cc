#include "k8s_provider/kubernetes_provider.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "absl/strings/str_cat.h"

namespace orb {
namespace {

// A failed create after which the pod may or may not exist.
bool Ambiguous(const absl::Status& s) {
  return s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kDeadlineExceeded ||
         s.code() == absl::StatusCode::kUnknown || s.code() == absl::StatusCode::kInternal;
}

constexpr std::chrono::milliseconds kCreateRoundPause{300};

}  // namespace

std::string PendingReason(const nlohmann::json& status) {
  auto with_message = [](const nlohmann::json& j) {
    std::string reason = j.value("reason", "");
    std::string message = j.value("message", "");
    return message.empty() ? reason : reason + ": " + message;
  };
  // A container that cannot start: ImagePullBackOff, CreateContainerConfigError...
  for (const auto& c : status.value("containerStatuses", nlohmann::json::array())) {
    const auto& waiting = c.value("state", nlohmann::json::object()).value("waiting", nlohmann::json::object());
    if (waiting.contains("reason") && waiting.value("reason", "") != "ContainerCreating") return with_message(waiting);
  }
  // A pod no node can take: PodScheduled False, reason Unschedulable.
  for (const auto& cond : status.value("conditions", nlohmann::json::array())) {
    if (cond.value("type", "") == "PodScheduled" && cond.value("status", "") == "False") return with_message(cond);
  }
  return status.contains("reason") ? with_message(status) : "";
}

std::optional<ProviderNode> ProviderNodeFromPod(const nlohmann::json& pod) {
  const auto& meta = pod.value("metadata", nlohmann::json::object());
  if (meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null()) return std::nullopt;
  const auto& labels = meta.value("labels", nlohmann::json::object());
  ProviderNode node;
  node.id = meta.value("name", "");
  node.node_type = labels.value(kLabelNodeType, "");
  node.kind = labels.value(kLabelNodeKind, "worker") == "head" ? NodeKind::kHead : NodeKind::kWorker;
  node.launch_request = labels.value(kLabelLaunchRequest, "");
  const auto& status = pod.value("status", nlohmann::json::object());
  std::string phase = status.value("phase", "Pending");
  node.ip = status.value("podIP", "");
  if (phase == "Running") {
    node.state = ProviderNodeState::kRunning;
  } else if (phase == "Failed" || phase == "Succeeded") {
    node.state = ProviderNodeState::kFailed;
    node.failure = absl::StrCat("pod ", phase, status.contains("reason") ? ": " + status.value("reason", "") : "",
                                status.contains("message") ? " " + status.value("message", "") : "");
    // Why its container ended, e.g. OOMKilled (the autoscaler's replace_on_oom rule).
    for (const auto& c : status.value("containerStatuses", nlohmann::json::array())) {
      const auto& terminated = c.value("state", nlohmann::json::object()).value("terminated", nlohmann::json::object());
      if (terminated.contains("reason")) {
        absl::StrAppend(&node.failure, " (container ", c.value("name", "?"), ": ", terminated.value("reason", ""),
                        ", exit code ", terminated.value("exitCode", 0), ")");
      }
    }
  } else {
    node.state = ProviderNodeState::kPending;
    node.reason = PendingReason(status);
  }
  return node;
}

KubernetesProvider::KubernetesProvider(std::unique_ptr<KubeClient> client, KubernetesProviderOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  if (options_.watch) {
    watcher_ = std::make_unique<PodWatcher>(client_.get(), PodsPath(), ClusterSelector());
    watcher_->Start();
  }
}

KubernetesProvider::~KubernetesProvider() {
  if (watcher_) watcher_->Stop();
}

std::string KubernetesProvider::PodsPath() const {
  return absl::StrCat("/api/v1/namespaces/", options_.namespace_, "/pods");
}

std::string KubernetesProvider::ClusterSelector() const {
  return absl::StrCat(kLabelCluster, "=", options_.cluster_name);
}

absl::StatusOr<std::vector<nlohmann::json>> KubernetesProvider::ListPods(const std::string& selector) {
  auto list = client_->Get(PodsPath() + "?labelSelector=" + UrlEncode(selector));
  if (!list.ok()) return list.status();
  std::vector<nlohmann::json> pods;
  for (const auto& pod : list->value("items", nlohmann::json::array())) pods.push_back(pod);
  return pods;
}

absl::StatusOr<nlohmann::json> KubernetesProvider::PodFor(const NodeLaunch& launch) const {
  auto it = options_.pods.find(launch.node_type);
  if (it == options_.pods.end()) {
    return absl::InvalidArgumentError("no pod template for node type '" + launch.node_type + "'");
  }
  nlohmann::json pod = it->second;
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  auto& meta = pod["metadata"];
  if (!meta.is_object()) meta = nlohmann::json::object();
  meta["namespace"] = options_.namespace_;
  if (!meta.contains("name")) {
    // Pod names are DNS subdomains: lower case, digits, '-' and '.'.
    std::string type = launch.node_type;
    for (char& c : type) {
      c = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : '-';
    }
    meta["generateName"] = absl::StrCat(options_.cluster_name, "-", type, "-");
  }
  auto& labels = meta["labels"];
  if (!labels.is_object()) labels = nlohmann::json::object();
  for (const auto& [k, v] : launch.labels) labels[k] = v;
  labels[kLabelCluster] = options_.cluster_name;
  labels[kLabelNodeType] = launch.node_type;
  labels[kLabelNodeKind] = NodeKindName(launch.kind);
  labels[kLabelLaunchRequest] = launch.request_id;
  return pod;
}

absl::Status KubernetesProvider::CreateNodes(const NodeLaunch& launch) {
  auto pod = PodFor(launch);
  if (!pod.ok()) return pod.status();
  const std::string selector = absl::StrCat(ClusterSelector(), ",", kLabelLaunchRequest, "=", launch.request_id);
  absl::Status last;
  for (int round = 0; round < options_.max_create_rounds; ++round) {
    if (round > 0) std::this_thread::sleep_for(kCreateRoundPause * round);
    // Count what earlier attempts (this call's or a previous one's) already made.
    auto existing = ListPods(selector);
    if (!existing.ok()) {
      last = existing.status();
      continue;
    }
    int made = 0;
    for (const auto& p : *existing) made += ProviderNodeFromPod(p).has_value() ? 1 : 0;
    int missing = launch.count - made;
    if (missing <= 0) return absl::OkStatus();
    if (round > 0) spdlog::info("launch {}: {} of {} pods exist, creating {} more", launch.request_id, made, launch.count, missing);
    bool relist = false;
    for (int i = 0; i < missing && !relist; ++i) {
      auto created = client_->Create(PodsPath(), *pod);
      if (created.ok()) {
        spdlog::info("created pod {} (type {}, launch {})", (*created)["metadata"].value("name", "?"), launch.node_type,
                     launch.request_id);
        continue;
      }
      last = created.status();
      if (Ambiguous(last) || last.code() == absl::StatusCode::kAlreadyExists) {
        spdlog::warn("creating a pod of type {} failed ({}); looking for it by its launch label", launch.node_type,
                     last.ToString());
        relist = true;
      } else {
        return absl::Status(last.code(), "cannot create a pod of node type '" + launch.node_type + "': " +
                                             std::string(last.message()));
      }
    }
    if (!relist) return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrCat("cannot create ", launch.count, " pods of node type '", launch.node_type,
                                             "' after ", options_.max_create_rounds, " rounds: ", last.ToString()));
}

absl::Status KubernetesProvider::TerminateNodes(const std::vector<std::string>& ids) {
  absl::Status first;
  for (const auto& id : ids) {
    nlohmann::json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"},
                              {"gracePeriodSeconds", options_.termination_grace_seconds},
                              {"propagationPolicy", "Background"}};
    absl::Status s = client_->Delete(PodsPath() + "/" + id, options);
    if (!s.ok()) {
      spdlog::warn("cannot delete pod {}: {}", id, s.ToString());
      if (first.ok()) first = s;
    } else {
      spdlog::info("deleted pod {}", id);
    }
  }
  return first;
}

absl::StatusOr<std::vector<ProviderNode>> KubernetesProvider::ListNodes() {
  std::optional<std::vector<nlohmann::json>> pods;
  if (watcher_) pods = watcher_->Pods();
  if (!pods) {
    auto listed = ListPods(ClusterSelector());
    if (!listed.ok()) return listed.status();
    pods = std::move(*listed);
  }
  std::vector<ProviderNode> nodes;
  for (const auto& pod : *pods) {
    if (auto node = ProviderNodeFromPod(pod)) nodes.push_back(std::move(*node));
  }
  return nodes;
}

}  // namespace orb

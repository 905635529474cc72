// `orb up cluster.yaml` and `orb down cluster.yaml`.
//
// provider: local   — up starts a head here (`orb start --head --autoscale-config`),
//                     whose autoscaler starts the nodes; down stops the autoscaler, the
//                     nodes it started (its records) and the head.
// provider: kubernetes — up makes sure the cluster token's Secret exists and creates
//                     the head pod (which runs the GCS, a raylet and the autoscaler,
//                     reading this YAML from its env); down deletes every pod labelled
//                     with the cluster (head first, so nothing launches more) and waits
//                     until they are gone.
// Both show progress until the head and min_workers nodes are up: a bar in a terminal,
// a line per change otherwise.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "autoscaler/cluster_config.h"
#include "autoscaler/provider_factory.h"
#include "cli/commands.h"
#include "common/process.h"
#include "common/rpc.h"
#include "common/session.h"
#include "gcs_service.grpc.pb.h"
#include "k8s_provider/kubernetes_provider.h"
#include "k8s_provider/local_provider.h"

namespace orb::cli {
namespace {

using autoscaler::ClusterConfig;

int Fail(const std::string& command, const std::string& why) {
  std::cerr << "orb " << command << ": " << why << "\n";
  return 1;
}

int MinWorkers(const ClusterConfig& config) {
  int n = 0;
  for (const auto& t : config.node_types) n += t.name == config.head_node_type ? 0 : t.min_workers;
  return n;
}

// Shows "what: have/want" as a bar on a terminal, or a line whenever it changes.
class Progress {
 public:
  explicit Progress(std::string what) : what_(std::move(what)), tty_(::isatty(STDOUT_FILENO)) {}
  void Show(int have, int want, const std::string& detail) {
    std::string line = absl::StrCat(what_, ": ", have, "/", want, detail.empty() ? "" : "  (" + detail + ")");
    if (tty_) {
      constexpr int kWidth = 30;
      int filled = want > 0 ? std::min(kWidth, have * kWidth / want) : kWidth;
      std::cout << "\r[" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] " << line << "\033[K"
                << std::flush;
    } else if (line != last_) {
      std::cout << line << std::endl;
    }
    last_ = line;
  }
  void Done() {
    if (tty_) std::cout << std::endl;
  }

 private:
  std::string what_;
  bool tty_;
  std::string last_;
};

// ---- local -------------------------------------------------------------------------

std::string SessionOfCluster(const std::string& cluster_name) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(TempRoot(), ec)) {
    auto name = ReadFileToString(entry.path().string() + "/cluster_name");
    if (name.ok() && *name == cluster_name && std::filesystem::exists(entry.path().string() + "/autoscaler.pid")) {
      auto pid = ReadFileToString(entry.path().string() + "/gcs.pid");
      if (pid.ok() && IsProcessAlive(std::atoi(pid->c_str()))) return entry.path().string();
    }
  }
  return "";
}

int AliveNodes(const std::string& address) {
  RpcClient<rpc::GcsService> gcs(address, FindTokenForAddress(address));
  CallOptions call;
  call.timeout = std::chrono::milliseconds(3000);
  auto reply = gcs.CallSync<rpc::GetAllNodesReply>(ORB_RPC(GetAllNodes), rpc::GetAllNodesRequest(), call);
  if (!reply.ok()) return -1;
  int n = 0;
  for (const auto& node : reply->nodes()) n += node.state() == rpc::NodeInfo::ALIVE ? 1 : 0;
  return n;
}

int UpLocal(const ClusterConfig& config, const UpOptions& options) {
  std::string session = SessionOfCluster(config.cluster_name);
  std::string address;
  if (!session.empty()) {
    auto a = ReadFileToString(session + "/address");
    address = a.ok() ? *a : "";
    std::cout << "Cluster " << config.cluster_name << " is already up (GCS " << address << ").\n";
  } else {
    StartOptions start;
    start.head = true;
    start.autoscale_config = options.config_path;
    start.node.port = config.head_port;
    const auto* head = config.FindType(config.head_node_type);
    for (const auto& [name, amount] : head->resources) {
      if (name == "CPU") start.node.num_cpus = amount;
      if (name == "GPU") start.node.num_gpus = amount;
    }
    if (int rc = Start(start); rc != 0) return rc;
    address = FindLocalClusterAddress();
    session = FindSessionForAddress(address);
    WriteStringToFile(session + "/cluster_name", config.cluster_name).IgnoreError();
  }
  int want = 1 + MinWorkers(config);
  Progress progress("nodes up");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_s);
  while (true) {
    int have = AliveNodes(address);
    progress.Show(std::max(0, have), want, have < 0 ? "GCS not answering" : "");
    if (have >= want) break;
    if (std::chrono::steady_clock::now() > deadline) {
      progress.Done();
      return Fail("up", absl::StrCat("only ", std::max(0, have), " of ", want, " nodes came up within ", options.timeout_s,
                                     " s; see ", session, "/logs/autoscaler.log"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  progress.Done();
  std::cout << "Cluster " << config.cluster_name << " is up: GCS " << address << ". `orb status` shows it; `orb down "
            << options.config_path << "` stops it.\n";
  return 0;
}

int DownLocal(const ClusterConfig& config) {
  std::string session = SessionOfCluster(config.cluster_name);
  if (session.empty()) return Fail("down", "no running local cluster named " + config.cluster_name);
  if (auto pid = ReadFileToString(session + "/autoscaler.pid"); pid.ok()) {
    StopProcess(std::atoi(pid->c_str()), std::chrono::milliseconds(5000));  // before it launches more
  }
  LocalProviderOptions o;
  o.cluster_name = config.cluster_name;
  o.state_dir = session + "/autoscaler";
  LocalProvider provider(o);
  auto nodes = provider.ListNodes();
  std::vector<std::string> ids;
  if (nodes.ok()) {
    for (const auto& n : *nodes) ids.push_back(n.id);
  }
  provider.TerminateNodes(ids).IgnoreError();
  std::cout << "Terminated " << ids.size() << " node(s) of " << config.cluster_name << ".\n";
  auto address = ReadFileToString(session + "/address");
  StopOptions stop;
  stop.address = address.ok() ? *address : "";
  return Stop(stop);
}

// ---- kubernetes --------------------------------------------------------------------

std::string SecretsPath(const ClusterConfig& c) { return "/api/v1/namespaces/" + c.provider.namespace_ + "/secrets"; }
std::string PodsPath(const ClusterConfig& c) { return "/api/v1/namespaces/" + c.provider.namespace_ + "/pods"; }

absl::Status EnsureTokenSecret(KubeClient& kube, const ClusterConfig& config) {
  auto existing = kube.Get(SecretsPath(config) + "/" + config.provider.token_secret);
  if (existing.ok()) return absl::OkStatus();
  if (existing.status().code() != absl::StatusCode::kNotFound) return existing.status();
  nlohmann::json secret = {
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata", {{"name", config.provider.token_secret}, {"labels", {{kLabelCluster, config.cluster_name}}}}},
      {"type", "Opaque"},
      {"stringData", {{"token", GenerateToken()}}}};
  auto created = kube.Create(SecretsPath(config), secret);
  if (!created.ok() && created.status().code() != absl::StatusCode::kAlreadyExists) return created.status();
  std::cout << "Created Secret " << config.provider.token_secret << " with a new cluster token.\n";
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ProviderNode>> ClusterPods(KubeClient& kube, const ClusterConfig& config) {
  auto list = kube.Get(PodsPath(config) + "?labelSelector=" + UrlEncode(std::string(kLabelCluster) + "=" + config.cluster_name));
  if (!list.ok()) return list.status();
  std::vector<ProviderNode> nodes;
  for (const auto& pod : list->value("items", nlohmann::json::array())) {
    if (auto n = ProviderNodeFromPod(pod)) nodes.push_back(*n);
  }
  return nodes;
}

int UpKubernetes(const ClusterConfig& config, const std::string& yaml_text, const UpOptions& options) {
  auto kube = autoscaler::NewKubeClient(config.provider);
  if (!kube.ok()) return Fail("up", std::string(kube.status().message()));
  if (auto s = EnsureTokenSecret(**kube, config); !s.ok()) return Fail("up", "cannot make the token Secret: " + s.ToString());
  KubernetesProviderOptions o;
  o.cluster_name = config.cluster_name;
  o.namespace_ = config.provider.namespace_;
  o.watch = false;
  o.pods = autoscaler::PodsForTypes(config, "", yaml_text);
  auto client = autoscaler::NewKubeClient(config.provider);
  if (!client.ok()) return Fail("up", std::string(client.status().message()));
  KubernetesProvider provider(std::move(*client), o);
  NodeLaunch head;
  head.node_type = config.head_node_type;
  head.kind = NodeKind::kHead;
  head.count = 1;
  head.request_id = config.cluster_name + "-head";  // one head per cluster, however often `up` runs
  if (auto s = provider.CreateNodes(head); !s.ok()) return Fail("up", "cannot create the head pod: " + s.ToString());

  int want = 1 + MinWorkers(config);
  Progress progress("pods running");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_s);
  std::string head_ip;
  while (true) {
    auto pods = ClusterPods(**kube, config);
    int running = 0;
    std::string detail;
    if (pods.ok()) {
      for (const auto& p : *pods) {
        running += p.state == ProviderNodeState::kRunning ? 1 : 0;
        if (p.kind == NodeKind::kHead) {
          head_ip = p.ip;
          detail = absl::StrCat("head ", p.id, " ", ProviderNodeStateName(p.state));
          if (p.state == ProviderNodeState::kFailed) {
            progress.Done();
            return Fail("up", "the head pod " + p.id + " failed: " + p.failure);
          }
        }
      }
    } else {
      detail = pods.status().ToString();
    }
    progress.Show(running, want, detail);
    if (running >= want) break;
    if (std::chrono::steady_clock::now() > deadline) {
      progress.Done();
      return Fail("up", absl::StrCat("only ", running, " of ", want, " pods are running after ", options.timeout_s, " s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  progress.Done();
  std::cout << "Cluster " << config.cluster_name << " is up in namespace " << config.provider.namespace_
            << ": GCS " << head_ip << ":" << config.head_port << ". `orb down " << options.config_path
            << "` removes every pod it made.\n";
  return 0;
}

int DownKubernetes(const ClusterConfig& config, const DownOptions& options) {
  auto kube = autoscaler::NewKubeClient(config.provider);
  if (!kube.ok()) return Fail("down", std::string(kube.status().message()));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_s);
  std::set<std::string> asked;
  Progress progress("pods left");
  int initial = -1;
  while (true) {
    auto pods = ClusterPods(**kube, config);
    if (!pods.ok()) return Fail("down", "cannot list the cluster's pods: " + pods.status().ToString());
    // Head first: its autoscaler must not replace the workers being deleted.
    std::stable_partition(pods->begin(), pods->end(), [](const ProviderNode& p) { return p.kind == NodeKind::kHead; });
    for (const auto& p : *pods) {
      if (asked.count(p.id)) continue;
      auto s = (*kube)->Delete(PodsPath(config) + "/" + p.id, {{"apiVersion", "v1"}, {"kind", "DeleteOptions"},
                                                               {"propagationPolicy", "Background"}});
      if (!s.ok()) return Fail("down", "cannot delete pod " + p.id + ": " + s.ToString());
      asked.insert(p.id);
    }
    // Pods being deleted are listed until they are gone.
    auto all = (*kube)->Get(PodsPath(config) + "?labelSelector=" +
                            UrlEncode(std::string(kLabelCluster) + "=" + config.cluster_name));
    int left = all.ok() ? static_cast<int>(all->value("items", nlohmann::json::array()).size()) : -1;
    if (initial < 0) initial = left;
    progress.Show(std::max(0, left), std::max(initial, 0), "");
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      progress.Done();
      return Fail("down", absl::StrCat(left, " pods are still terminating after ", options.timeout_s, " s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  progress.Done();
  auto secret = (*kube)->Get(SecretsPath(config) + "/" + config.provider.token_secret);
  if (secret.ok() && (*secret)["metadata"]["labels"].value(kLabelCluster, "") == config.cluster_name) {
    (*kube)->Delete(SecretsPath(config) + "/" + config.provider.token_secret).IgnoreError();  // ours: made by `up`
  }
  std::cout << "Cluster " << config.cluster_name << " is down: " << asked.size() << " pod(s) deleted.\n";
  return 0;
}

// The pods `up` and the autoscaler would make, as a v1 List (kubectl apply -f - reads it).
int PrintPods(const ClusterConfig& config, const std::string& yaml_text) {
  KubernetesProviderOptions o;
  o.cluster_name = config.cluster_name;
  o.namespace_ = config.provider.namespace_;
  o.watch = false;
  o.pods = autoscaler::PodsForTypes(config, "$(ORB_HEAD_ADDRESS)", yaml_text);
  KubeConfig unused;
  unused.server = "http://127.0.0.1:1";
  auto transport = NewHttpTransport(unused);
  if (!transport.ok()) return Fail("up", transport.status().ToString());
  KubernetesProvider provider(std::make_unique<KubeClient>(std::move(*transport), KubeRetryPolicy()), o);
  nlohmann::json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", nlohmann::json::array()}};
  for (const auto& t : config.node_types) {
    NodeLaunch launch;
    launch.node_type = t.name;
    launch.kind = t.name == config.head_node_type ? NodeKind::kHead : NodeKind::kWorker;
    launch.request_id = "dry-run";
    auto pod = provider.PodFor(launch);
    if (!pod.ok()) return Fail("up", pod.status().ToString());
    list["items"].push_back(*pod);
  }
  std::cout << list.dump(2) << "\n";
  return 0;
}

}  // namespace

int Up(const UpOptions& options) {
  auto text = ReadFileToString(options.config_path);
  if (!text.ok()) return Fail("up", "cannot read " + options.config_path);
  auto config = autoscaler::ParseClusterConfig(*text, options.config_path);
  if (!config.ok()) return Fail("up", std::string(config.status().message()));
  if (options.dry_run) {
    if (config->provider.type == "kubernetes") return PrintPods(*config, *text);
    std::cout << options.config_path << ": valid; a local head and " << MinWorkers(*config) << " node(s) to start\n";
    return 0;
  }
  if (config->provider.type == "local") return UpLocal(*config, options);
  return UpKubernetes(*config, *text, options);
}

int Down(const DownOptions& options) {
  auto config = autoscaler::LoadClusterConfig(options.config_path);
  if (!config.ok()) return Fail("down", std::string(config.status().message()));
  if (config->provider.type == "local") return DownLocal(*config);
  return DownKubernetes(*config, options);
}

}  // namespace orb::cli

#include "autoscaler/provider_factory.h"

#include "common/daemon_launcher.h"
#include "k8s_provider/kubernetes_provider.h"
#include "k8s_provider/local_provider.h"
#include "k8s_provider/pod_template.h"

namespace orb::autoscaler {

absl::StatusOr<std::unique_ptr<KubeClient>> NewKubeClient(const ProviderConfig& p) {
  KubeConfig kube;
  auto loaded = p.kubeconfig.empty() && p.context.empty() ? LoadDefaultKubeConfig() : LoadKubeconfigFile(p.kubeconfig, p.context);
  if (loaded.ok()) {
    kube = *loaded;
  } else if (p.server.empty()) {
    return absl::InvalidArgumentError("no Kubernetes API server: give provider.server, or run in a pod, or have a "
                                      "kubeconfig (" + std::string(loaded.status().message()) + ")");
  }
  if (!p.server.empty()) kube.server = p.server;
  auto transport = NewHttpTransport(kube);
  if (!transport.ok()) return transport.status();
  return std::make_unique<KubeClient>(std::move(*transport), KubeRetryPolicy());
}

std::map<std::string, nlohmann::json> PodsForTypes(const ClusterConfig& config, const std::string& gcs_address,
                                                   const std::string& cluster_config_yaml) {
  std::map<std::string, nlohmann::json> pods;
  for (const auto& t : config.node_types) {
    OrbPodSpec spec;
    spec.node_type = t.name;
    spec.kind = t.name == config.head_node_type ? NodeKind::kHead : NodeKind::kWorker;
    spec.resources = t.resources;
    spec.labels = t.labels;
    spec.pod_template = t.pod_template;
    spec.gcs_address = gcs_address;
    spec.token_secret = config.provider.token_secret;
    spec.image = config.provider.image;
    spec.service_account = config.provider.service_account;
    if (spec.kind == NodeKind::kHead) {
      // The head runs the autoscaler, which reads this same config from its env.
      spec.head_args = {"--port", std::to_string(config.head_port), "--autoscale-config-env", "ORB_CLUSTER_CONFIG"};
      spec.extra_env["ORB_CLUSTER_CONFIG"] = cluster_config_yaml;
    }
    pods[t.name] = BuildOrbPod(spec);
  }
  return pods;
}

absl::StatusOr<std::unique_ptr<NodeProvider>> NewNodeProvider(const ClusterConfig& config, const ProviderPlacement& where) {
  if (config.provider.type == "local") {
    LocalProviderOptions o;
    o.cluster_name = config.cluster_name;
    o.state_dir = where.state_dir;
    o.orb_binary = FindOrbBinary("orb");
    if (o.orb_binary.empty()) return absl::NotFoundError("cannot find the orb binary for the local provider's nodes");
    o.gcs_address = where.gcs_address;
    o.token = where.token;
    for (const auto& t : config.node_types) o.node_types[t.name] = LocalNodeType{t.resources, t.labels};
    return std::unique_ptr<NodeProvider>(std::make_unique<LocalProvider>(std::move(o)));
  }
  auto client = NewKubeClient(config.provider);
  if (!client.ok()) return client.status();
  KubernetesProviderOptions o;
  o.cluster_name = config.cluster_name;
  o.namespace_ = config.provider.namespace_;
  o.watch = where.watch;
  o.pods = PodsForTypes(config, where.gcs_address, "");
  o.pods.erase(config.head_node_type);  // the autoscaler never launches heads
  return std::unique_ptr<NodeProvider>(std::make_unique<KubernetesProvider>(std::move(*client), std::move(o)));
}

}  // namespace orb::autoscaler

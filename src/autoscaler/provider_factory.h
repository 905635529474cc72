// The node provider a cluster config names: local processes or Kubernetes pods.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "autoscaler/cluster_config.h"
#include "k8s_provider/kube_client.h"
#include "k8s_provider/node_provider.h"

namespace orb::autoscaler {

struct ProviderPlacement {
  std::string gcs_address;  // what new nodes join
  std::string token;        // local provider: given to the nodes
  std::string state_dir;    // local provider: its node records and logs
  bool watch = true;        // kubernetes: keep a watched copy of the pods
};

absl::StatusOr<std::unique_ptr<NodeProvider>> NewNodeProvider(const ClusterConfig& config, const ProviderPlacement& where);

// The Kubernetes API client for `config.provider` (server, kubeconfig, context; the
// service account inside a pod).
absl::StatusOr<std::unique_ptr<KubeClient>> NewKubeClient(const ProviderConfig& config);

// The pod manifest of each node type of a kubernetes provider (head included).
std::map<std::string, nlohmann::json> PodsForTypes(const ClusterConfig& config, const std::string& gcs_address,
                                                   const std::string& cluster_config_yaml);

}  // namespace orb::autoscaler

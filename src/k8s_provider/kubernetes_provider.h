// Nodes as Kubernetes pods: one pod per node, made from its node type's pod manifest
// (see pod_template.h), labelled with the cluster, node type, node kind and launch
// request so that list, idempotent create and cleanup work by label selector.
//
// A create whose reply was lost (a timeout, a broken connection, a 5xx after which the
// pod may exist) is never simply repeated: the provider lists the pods carrying the
// launch's `orb.io/launch-request` label and creates only the missing ones. So neither
// a lost reply nor a retried CreateNodes leaks or doubles a pod.
//
// ListNodes answers from a PodWatcher's copy when one is running and synced, else by a
// list. Pods with a deletionTimestamp count as gone.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>

#include "k8s_provider/kube_client.h"
#include "k8s_provider/node_provider.h"
#include "k8s_provider/pod_watcher.h"

namespace orb {

struct KubernetesProviderOptions {
  std::string cluster_name;
  std::string namespace_ = "default";
  // The pod of each node type (metadata and spec); the provider adds the namespace,
  // a generateName when it has no name, and the orb.io labels.
  std::map<std::string, nlohmann::json> pods;
  // Keep a watched copy of the cluster's pods for ListNodes.
  bool watch = true;
  // List-then-create rounds before CreateNodes gives up (Unavailable).
  int max_create_rounds = 6;
  // Grace period given to a deleted pod.
  int termination_grace_seconds = 30;
};

class KubernetesProvider : public NodeProvider {
 public:
  KubernetesProvider(std::unique_ptr<KubeClient> client, KubernetesProviderOptions options);
  ~KubernetesProvider() override;

  absl::Status CreateNodes(const NodeLaunch& launch) override;
  absl::Status TerminateNodes(const std::vector<std::string>& ids) override;
  absl::StatusOr<std::vector<ProviderNode>> ListNodes() override;

  // The pod manifest CreateNodes posts for `launch` (for tests and `orb up --dry-run`).
  absl::StatusOr<nlohmann::json> PodFor(const NodeLaunch& launch) const;
  const PodWatcher* watcher() const { return watcher_.get(); }

 private:
  std::string PodsPath() const;
  std::string ClusterSelector() const;
  absl::StatusOr<std::vector<nlohmann::json>> ListPods(const std::string& selector);

  std::unique_ptr<KubeClient> client_;
  const KubernetesProviderOptions options_;
  std::unique_ptr<PodWatcher> watcher_;
};

// A pod as a provider node; nullopt for a pod being deleted.
std::optional<ProviderNode> ProviderNodeFromPod(const nlohmann::json& pod);
// Why a pending pod is not running, from its status: a container's waiting reason
// (ImagePullBackOff, CreateContainerConfigError...) or PodScheduled=False
// (Unschedulable), with the message; empty when the status gives none.
std::string PendingReason(const nlohmann::json& pod_status);

}  // namespace orb

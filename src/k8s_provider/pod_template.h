// The pod that runs one orb node: the node type's pod template (any Pod spec the user
// wants: image, node selector, tolerations, volumes), with what orb needs filled in:
// - env: ORB_ADDRESS (the GCS the raylet joins), ORB_TOKEN (from the cluster token's
//   Secret, never in plain text in the spec), ORB_POD_NAME and ORB_POD_IP (from the
//   downward API), ORB_NODE_TYPE;
// - when the first container has no args: `orb start --block` with the type's resources
//   and labels (the pod's name as orb.io/provider-node-id, so the autoscaler can tie
//   the raylet to its pod), and `--head` with the head's flags for the head type;
// - resource requests and limits (cpu, memory, nvidia.com/gpu) from the type's
//   resources where the template sets none, so Kubernetes places the pod on a machine
//   that has them;
// - /dev/shm as a memory-backed emptyDir (the object store lives there; a container's
//   own /dev/shm is 64 MiB), unless the template mounts something there;
// - for the head, the service account the autoscaler runs as (`service_account`).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "k8s_provider/node_provider.h"

namespace orb {

struct OrbPodSpec {
  std::string node_type;
  NodeKind kind = NodeKind::kWorker;
  std::map<std::string, double> resources;  // CPU, GPU, memory (bytes), custom names
  std::map<std::string, std::string> labels;
  nlohmann::json pod_template;  // a Pod (metadata, spec) or null
  std::string gcs_address;      // workers: the GCS "host:port" to join
  std::string token_secret;     // the Secret holding the cluster token under `token`
  std::string image = "orb:latest";  // when the template's container names none
  std::vector<std::string> head_args;  // extra `orb start --head` flags (head only)
  std::map<std::string, std::string> extra_env;  // more env for the container
  std::string service_account;  // head only: its pod's serviceAccountName when the template names none
};

nlohmann::json BuildOrbPod(const OrbPodSpec& spec);

// `orb start` flags for `resources`: --num-cpus, --num-gpus, --memory, --resources.
std::vector<std::string> ResourceFlags(const std::map<std::string, double>& resources);

}  // namespace orb

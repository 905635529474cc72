// `orb logs --pod POD_OR_NODE --config CLUSTER_YAML`: the Kubernetes container log of a
// node's pod (what the container printed: its start, a crash before the raylet wrote
// anything), then orb's own log files of that node, so both are in one place.
#include <iostream>

#include "autoscaler/cluster_config.h"
#include "autoscaler/provider_factory.h"
#include "cli/commands.h"
#include "common/session.h"
#include "common/state_client.h"
#include "k8s_provider/kube_client.h"
#include "k8s_provider/node_provider.h"

namespace orb::cli {
namespace {

// (pod, node ID) of the live node that `pod_or_node` names: its pod's name (its
// provider-node-id label) or the start of its ID. Empty when no live node matches.
std::pair<std::string, std::string> FindPodNode(const std::string& address, const std::string& pod_or_node) {
  if (address.empty()) return {};
  auto nodes = QueryState(address, FindTokenForAddress(address), StateQuery{"nodes", {"state=ALIVE"}, 0});
  if (!nodes.ok()) return {};
  for (const auto& n : nodes->rows) {
    std::string id = n["node_id"];
    nlohmann::json labels = n["labels"].is_string() ? nlohmann::json::parse(n["labels"].get<std::string>(), nullptr, false)
                                                    : n["labels"];
    if (!labels.is_object() || !labels.contains(kLabelProviderNodeId)) continue;
    std::string pod = labels[kLabelProviderNodeId];
    if (pod == pod_or_node || id.rfind(pod_or_node, 0) == 0) return {pod, id};
  }
  return {};
}

}  // namespace

int PodLogs(const LogsOptions& o) {
  auto fail = [](const std::string& why) {
    std::cerr << "orb logs: " << why << "\n";
    return 1;
  };
  if (o.cluster_config.empty()) return fail("--pod needs --config CLUSTER_YAML (the file `orb up` started the cluster with)");
  auto config = autoscaler::LoadClusterConfig(o.cluster_config);
  if (!config.ok()) return fail(std::string(config.status().message()));
  if (config->provider.type != "kubernetes") {
    return fail("--pod: the cluster in " + o.cluster_config + " runs its nodes as local processes, not pods: " +
                "their output is in `orb logs` already");
  }
  std::string address = o.address.empty() ? FindLocalClusterAddress() : o.address;
  auto [pod, node] = FindPodNode(address, o.pod);
  if (pod.empty()) pod = o.pod;
  auto kube = autoscaler::NewKubeClient(config->provider);
  if (!kube.ok()) return fail("cannot reach Kubernetes: " + std::string(kube.status().message()));
  std::string path = "/api/v1/namespaces/" + config->provider.namespace_ + "/pods/" + pod +
                     "/log?tailLines=" + std::to_string(o.tail);
  auto text = (*kube)->GetText(path);
  if (!text.ok()) return fail("pod " + pod + ": " + std::string(text.status().message()));
  std::cout << "==> pod " << pod << ": its container's log (Kubernetes), last " << o.tail << " lines <==\n" << *text;
  if (!text->empty() && text->back() != '\n') std::cout << "\n";
  if (node.empty()) return 0;
  std::cout << "\n==> node " << node << ": orb's log files (orb logs --node " << node.substr(0, 8) << " NAME) <==\n";
  LogsOptions files;
  files.address = address;
  files.node = node;
  return Logs(files);
}

}  // namespace orb::cli

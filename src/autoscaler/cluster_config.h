// The cluster YAML of `orb up` / `orb down` and of the autoscaler (Ray's cluster config,
// with orb's keys):
//
//   cluster_name: demo
//   max_workers: 8              # launched nodes in the whole cluster
//   upscaling_speed: 1.0        # pending launches allowed, as a multiple of the nodes
//   idle_timeout_s: 300         # or idle_timeout_minutes, as Ray
//   update_interval_s: 1
//   provider:
//     type: kubernetes          # or local
//     namespace: orb            # kubernetes: where the pods go
//     server: https://...       # optional: else in-cluster config, else kubeconfig
//     kubeconfig: ~/.kube/config
//     context: name
//     token_secret: orb-cluster-token  # the Secret holding the cluster token
//     service_account: orb-autoscaler  # the head pod's: may manage pods
//     image: orb:latest
//   head_node_type: head
//   available_node_types:
//     head: {resources: {CPU: 2}}
//     cpu_worker:
//       resources: {CPU: 2}
//       labels: {zone: a}
//       min_workers: 0
//       max_workers: 4
//       pod_template: {spec: {...}}  # kubernetes: any Pod fields
//   metric_rules:               # see metric_rules.h
//     prometheus: {url: http://prometheus:9090, query: 'avg by (node_type) (DCGM_FI_DEV_GPU_UTIL)'}
//     scale_out: [{node_type: gpu_worker, utilisation_above: 80, for_s: 300, add_nodes: 1}]
//     scale_in: [{node_type: gpu_worker, utilisation_below: 0, for_s: 1800}]
//     replace_on_oom: {oom_kills: 3, window_s: 600}
//     forecast: [{node_type: cpu_worker, sample_s: 60, season_s: 86400, horizon_s: 600}]
//
// Unknown keys and wrong types are errors naming the file, line and key.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "autoscaler/metric_rules.h"
#include "common/resources.h"

namespace orb::autoscaler {

struct NodeTypeConfig {
  std::string name;
  std::map<std::string, double> resources;
  std::map<std::string, std::string> labels;
  int min_workers = 0;
  int max_workers = 0;
  int warm_pool = 0;  // idle nodes kept ready (scaling_planner.h)
  nlohmann::json pod_template;  // null when not given
};

struct ProviderConfig {
  std::string type = "local";  // local | kubernetes
  std::string namespace_ = "default";
  std::string server;
  std::string kubeconfig;
  std::string context;
  std::string token_secret = "orb-cluster-token";
  std::string service_account = "orb-autoscaler";  // the head pod's (deploy/k8s/rbac.yaml)
  std::string image = "orb:latest";
};

struct ClusterConfig {
  std::string cluster_name;
  int max_workers = 1000;
  double upscaling_speed = 1.0;
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(5)};
  std::chrono::milliseconds update_interval{std::chrono::seconds(1)};
  ProviderConfig provider;
  std::string head_node_type;
  std::vector<NodeTypeConfig> node_types;  // in the file's order
  int head_port = 6379;
  MetricRulesConfig metric_rules;

  const NodeTypeConfig* FindType(const std::string& name) const;
  // available_node_types as the JSON the raylets read (common/node_types.h), so work
  // that only a launchable node could run waits for one.
  std::string NodeTypesJson() const;
};

// `source` names the text in errors (a path). InvalidArgument "FILE line N: ...".
absl::StatusOr<ClusterConfig> ParseClusterConfig(const std::string& yaml_text, const std::string& source);
absl::StatusOr<ClusterConfig> LoadClusterConfig(const std::string& path);

}  // namespace orb::autoscaler

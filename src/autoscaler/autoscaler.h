// The autoscaler's loop: each round it reads the cluster (ClusterStateSource) and the
// provider's nodes, ties them together by the orb.io/provider-node-id label, tracks
// launches until their nodes appear, runs the planner (scaling_planner.h), and carries
// the plan out: launches through the provider, and for terminations, drains the node's
// raylet first (a node that has become busy is kept). Every decision is logged with its
// reason and kept for `orb status` (published to the GCS each round).
//
// The metric rules of the config (metric_rules.h) adjust the planner's input each round,
// with utilisation from `utilisation` (a Prometheus server) or, when it is null, from
// the nodes' own reports.
//
// The clock is injected (Now), so tests drive idle timeouts of minutes in seconds.
// Single-threaded: call Update from one thread.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <string>

#include "autoscaler/cluster_config.h"
#include "autoscaler/cluster_state.h"
#include "autoscaler/metric_rules.h"
#include "autoscaler/prometheus_source.h"
#include "autoscaler/scaling_planner.h"
#include "k8s_provider/node_provider.h"

namespace orb::autoscaler {

using Clock = std::function<std::chrono::steady_clock::time_point()>;

struct AutoscalerOptions {
  ClusterConfig config;
  // A launch whose nodes have not all appeared in the provider's list by then is
  // forgotten (its missing nodes are no longer counted as coming).
  std::chrono::milliseconds launch_timeout{std::chrono::minutes(10)};
  // A node the provider runs whose raylet has not joined by then is terminated.
  std::chrono::milliseconds join_timeout{std::chrono::minutes(10)};
  size_t decisions_kept = 50;
  // After a node of a type fails, that type is launched again only after a pause that
  // doubles with each failure in a row (up to the maximum) and resets once a node of
  // the type joins: a broken image or template does not make a pod a second.
  std::chrono::milliseconds failure_backoff{std::chrono::seconds(5)};
  std::chrono::milliseconds max_failure_backoff{std::chrono::minutes(5)};
};

class Autoscaler {
 public:
  Autoscaler(AutoscalerOptions options, NodeProvider* provider, ClusterStateSource* cluster, Clock now,
             UtilisationSource* utilisation = nullptr);

  // One round. Errors from the cluster or the provider end the round early (the next
  // one tries again); the error is returned and recorded.
  absl::Status Update();

  const ScalingPlan& last_plan() const { return last_plan_; }
  // {"nodes": [{"id", "type", "state": launching|running|idle|failed, "idle_s"}],
  //  "pending_launches": {type: n}, "decisions": [{"t": seconds ago, "what"}],
  //  "infeasible": [...], "error": "..."}
  nlohmann::json StatusJson() const;

 private:
  struct Launch {
    std::string node_type;
    int count = 0;
    std::chrono::steady_clock::time_point at;
  };
  void Decide(const std::string& what);
  ScalingInput BuildInput(const ClusterState& cluster, const std::vector<ProviderNode>& nodes);
  void Execute(const ScalingPlan& plan, const ClusterState& cluster, const std::vector<ProviderNode>& nodes);
  void ForgetStaleLaunches(const std::vector<ProviderNode>& nodes);
  void ApplyMetricRules(const std::vector<std::string>& oom_killed_types, ScalingInput* input);

  AutoscalerOptions options_;
  NodeProvider* provider_;
  ClusterStateSource* cluster_;
  Clock now_;
  UtilisationSource* utilisation_;
  std::unique_ptr<MetricRules> rules_;  // null without metric_rules

  struct TypeFailures {
    int in_a_row = 0;
    std::chrono::steady_clock::time_point retry_at;
    std::string last;
  };
  void HoldBackFailedTypes(ScalingInput* input);

  std::map<std::string, Launch> launches_;  // by request ID
  std::map<std::string, TypeFailures> failures_;  // by node type
  std::map<std::string, std::string> held_back_;  // the last hold-back reported, by type
  std::map<std::string, std::chrono::steady_clock::time_point> idle_since_;    // by provider node ID
  std::map<std::string, std::chrono::steady_clock::time_point> first_seen_;    // provider nodes not yet joined
  std::map<std::string, std::string> pending_reasons_;  // provider nodes not yet joined: why, as last logged
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::string>> decisions_;
  std::string last_reasons_;  // to log a repeated plan once
  ScalingPlan last_plan_;
  nlohmann::json last_nodes_ = nlohmann::json::array();
  std::string last_error_;
  uint64_t next_launch_ = 0;
};

}  // namespace orb::autoscaler

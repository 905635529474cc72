#include "autoscaler/autoscaler.h"

#include <spdlog/spdlog.h>

#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace orb::autoscaler {
namespace {

std::string RandomTag() {
  static const char* kChars = "bcdfghjklmnpqrstvwxz2456789";
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 6; ++i) s += kChars[rd() % 27];
  return s;
}

// A node type as the planner sees it: its nodes carry its labels and its name.
NodeTypeLimits LimitsOf(const NodeTypeConfig& t) {
  NodeTypeLimits limits{t.name, ResourceSet::FromMap(t.resources), t.min_workers, t.max_workers};
  limits.labels = t.labels;
  limits.labels[kLabelNodeType] = t.name;
  limits.warm_pool = t.warm_pool;
  return limits;
}

int64_t Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::seconds>(d).count();
}

}  // namespace

Autoscaler::Autoscaler(AutoscalerOptions options, NodeProvider* provider, ClusterStateSource* cluster, Clock now,
                       UtilisationSource* utilisation)
    : options_(std::move(options)), provider_(provider), cluster_(cluster), now_(std::move(now)), utilisation_(utilisation) {
  if (!options_.config.metric_rules.empty()) {
    std::vector<NodeTypeLimits> types;
    for (const auto& t : options_.config.node_types) {
      if (t.name != options_.config.head_node_type) {
        types.push_back(LimitsOf(t));
      }
    }
    rules_ = std::make_unique<MetricRules>(options_.config.metric_rules, std::move(types));
  }
}

void Autoscaler::ApplyMetricRules(const std::vector<std::string>& oom_killed_types, ScalingInput* input) {
  MetricObservation seen;
  seen.now = now_();
  seen.oom_killed_types = oom_killed_types;
  // Per node type: what its nodes hold and use of their main resource (GPU, else CPU).
  std::map<std::string, std::pair<double, double>> used_of_total;
  std::map<std::string, std::map<std::string, double>> capacity_by_type;  // type ("" for others) → resource → total
  for (const auto& n : input->nodes) {
    if (!n.node_type.empty()) seen.nodes[n.node_type]++;
    if (n.launching) continue;
    for (const std::string r : {"CPU", "GPU"}) {
      double total = n.total.Get(r);
      capacity_by_type[n.node_type][r] += total;
      seen.demand[r] += total - n.available.Get(r);
    }
    if (!n.node_type.empty()) {
      std::string r = rules_->MainResource(n.node_type);
      used_of_total[n.node_type].first += n.total.Get(r) - n.available.Get(r);
      used_of_total[n.node_type].second += n.total.Get(r);
    }
  }
  for (const auto& q : input->queued) {
    for (const std::string r : {"CPU", "GPU"}) seen.demand[r] += q.shape.Get(r) * static_cast<double>(q.count);
  }
  for (const auto& t : input->types) {
    for (const auto& [type, amounts] : capacity_by_type) {
      if (type == t.name) continue;
      for (const auto& [r, amount] : amounts) seen.capacity_without_type[t.name][r] += amount;
    }
  }
  if (utilisation_) {
    auto read = utilisation_->Read();
    if (read.ok()) {
      for (const auto& t : input->types) {
        auto it = read->find(t.name);
        if (it == read->end()) it = read->find("");  // a sample without the type label: every type
        if (it != read->end()) seen.utilisation[t.name] = it->second;
      }
    } else if (last_error_.empty()) {
      last_error_ = "metric rules: " + read.status().ToString();
      spdlog::warn("autoscaler: {}", last_error_);
    }
  } else {
    for (const auto& [type, ut] : used_of_total) {
      if (ut.second > 0) seen.utilisation[type] = 100.0 * ut.first / ut.second;
    }
  }
  for (const auto& d : rules_->Apply(seen, input)) Decide(d);
}

void Autoscaler::Decide(const std::string& what) {
  spdlog::info("autoscaler: {}", what);
  decisions_.emplace_back(now_(), what);
  while (decisions_.size() > options_.decisions_kept) decisions_.pop_front();
}

void Autoscaler::ForgetStaleLaunches(const std::vector<ProviderNode>& nodes) {
  for (auto it = launches_.begin(); it != launches_.end();) {
    int seen = 0;
    for (const auto& n : nodes) seen += n.launch_request == it->first ? 1 : 0;
    if (seen >= it->second.count) {
      it = launches_.erase(it);  // its nodes are counted as the provider's from now on
    } else if (now_() - it->second.at > options_.launch_timeout) {
      Decide(absl::StrCat("launch ", it->first, ": only ", seen, " of ", it->second.count, " ", it->second.node_type,
                          " nodes appeared within ", Seconds(options_.launch_timeout), " s; no longer waiting for the rest"));
      it = launches_.erase(it);
    } else {
      ++it;
    }
  }
}

ScalingInput Autoscaler::BuildInput(const ClusterState& cluster, const std::vector<ProviderNode>& nodes) {
  const ClusterConfig& config = options_.config;
  const auto now = now_();
  ScalingInput in;
  for (const auto& t : config.node_types) {
    if (t.name == config.head_node_type) continue;
    in.types.push_back(LimitsOf(t));
  }
  in.max_workers = config.max_workers;
  in.upscaling_speed = config.upscaling_speed;
  in.idle_timeout = config.idle_timeout;
  in.placement_groups = cluster.pending_groups;
  in.requested = cluster.requested;

  std::map<std::string, const ProviderNode*> by_id;
  for (const auto& n : nodes) by_id[n.id] = &n;
  std::set<std::string> joined;
  std::set<std::string> live_keys;
  last_nodes_ = nlohmann::json::array();
  for (const auto& c : cluster.nodes) {
    PlannerNode p;
    auto it = c.provider_node_id.empty() ? by_id.end() : by_id.find(c.provider_node_id);
    bool managed = it != by_id.end() && it->second->kind == NodeKind::kWorker;
    p.key = it != by_id.end() ? c.provider_node_id : c.node_id;
    p.node_type = managed ? it->second->node_type : "";
    if (it != by_id.end()) joined.insert(c.provider_node_id);
    if (managed) failures_.erase(it->second->node_type);  // a node of the type works
    p.total = c.total;
    p.available = c.available;
    p.labels = c.labels;
    live_keys.insert(p.key);
    if (c.Idle()) {
      auto since = idle_since_.emplace(p.key, now).first->second;
      p.idle_for = std::chrono::duration_cast<std::chrono::milliseconds>(now - since);
      if (p.idle_for.count() == 0) p.idle_for = std::chrono::milliseconds(1);
    } else {
      idle_since_.erase(p.key);
    }
    for (const auto& d : c.queued) in.queued.push_back(d);
    last_nodes_.push_back({{"id", p.key},
                           {"type", it != by_id.end() ? it->second->node_type : ""},
                           {"state", c.Idle() ? "idle" : "running"},
                           {"idle_s", Seconds(p.idle_for)},
                           {"resources", c.total.ToString()},
                           {"available", c.available.ToString()}});
    in.nodes.push_back(std::move(p));
  }
  for (auto it = idle_since_.begin(); it != idle_since_.end();) {
    it = live_keys.count(it->first) ? std::next(it) : idle_since_.erase(it);
  }
  for (const auto& n : nodes) {
    if (joined.count(n.id) || n.kind != NodeKind::kWorker) continue;
    const NodeTypeConfig* type = config.FindType(n.node_type);
    if (!type) continue;
    first_seen_.emplace(n.id, now);
    PlannerNode p;
    p.key = n.id;
    p.node_type = n.node_type;
    p.launching = true;
    p.total = ResourceSet::FromMap(type->resources);
    p.labels = LimitsOf(*type).labels;
    in.nodes.push_back(std::move(p));
    nlohmann::json row = {{"id", n.id}, {"type", n.node_type}, {"state", "launching"},
                          {"provider_state", ProviderNodeStateName(n.state)}};
    if (!n.reason.empty()) {
      row["reason"] = n.reason;
      // Logged once per reason: why a pod stays pending is what an operator looks for.
      auto [seen, added] = pending_reasons_.try_emplace(n.id, n.reason);
      if (added || seen->second != n.reason) {
        seen->second = n.reason;
        Decide(absl::StrCat(n.id, " (", n.node_type, ") is pending: ", n.reason));
      }
    }
    last_nodes_.push_back(std::move(row));
  }
  for (auto it = first_seen_.begin(); it != first_seen_.end();) {
    it = by_id.count(it->first) && !joined.count(it->first) ? std::next(it) : first_seen_.erase(it);
  }
  for (auto it = pending_reasons_.begin(); it != pending_reasons_.end();) {
    it = first_seen_.count(it->first) ? std::next(it) : pending_reasons_.erase(it);
  }
  for (const auto& [id, launch] : launches_) {
    int seen = 0;
    for (const auto& n : nodes) seen += n.launch_request == id ? 1 : 0;
    const NodeTypeConfig* type = config.FindType(launch.node_type);
    for (int i = seen; i < launch.count && type; ++i) {
      PlannerNode p;
      p.key = absl::StrCat(id, "/", i);
      p.node_type = launch.node_type;
      p.launching = true;
      p.total = ResourceSet::FromMap(type->resources);
      p.labels = LimitsOf(*type).labels;
      in.nodes.push_back(std::move(p));
    }
  }
  return in;
}

void Autoscaler::Execute(const ScalingPlan& plan, const ClusterState& cluster, const std::vector<ProviderNode>& nodes) {
  for (const auto& [type, count] : plan.launch) {
    NodeLaunch launch;
    launch.node_type = type;
    launch.count = count;
    launch.request_id = absl::StrCat(options_.config.cluster_name, "-", next_launch_++, "-", RandomTag());
    auto why = plan.launch_reasons.find(type);
    Decide(absl::StrCat("launch ", count, " x ", type, " (", why == plan.launch_reasons.end() ? "" : why->second,
                        ") as ", launch.request_id));
    absl::Status s = provider_->CreateNodes(launch);
    if (!s.ok()) {
      // Nodes it did make carry the launch's label: the next round counts them.
      Decide(absl::StrCat("launch ", launch.request_id, " failed: ", s.message()));
      continue;
    }
    launches_[launch.request_id] = {type, count, now_()};
  }
  // Objects of drained nodes go to nodes that stay: not to those leaving now, nor to
  // idle workers that may leave next.
  std::vector<std::string> avoid;
  std::set<std::string> leaving(plan.terminate.begin(), plan.terminate.end());
  for (const auto& c : cluster.nodes) {
    bool worker = false;
    for (const auto& n : nodes) worker |= n.id == c.provider_node_id && n.kind == NodeKind::kWorker;
    if (leaving.count(c.provider_node_id) || (worker && c.Idle())) avoid.push_back(c.node_id);
  }
  for (const auto& key : plan.terminate) {
    const ClusterNodeState* node = nullptr;
    for (const auto& c : cluster.nodes) {
      if (c.provider_node_id == key) node = &c;
    }
    std::string reason = "idle";
    for (const auto& r : plan.reasons) {
      if (r.find("terminate " + key) == 0) reason = r;
    }
    if (node) {
      absl::Status drained = cluster_->Drain(*node, reason, avoid);
      if (drained.code() == absl::StatusCode::kFailedPrecondition) {
        Decide(absl::StrCat("keeping ", key, ": ", drained.message()));
        idle_since_.erase(key);
        continue;
      }
      if (!drained.ok()) spdlog::warn("cannot drain {} ({}); terminating it anyway", key, drained.ToString());
    }
    absl::Status s = provider_->TerminateNodes({key});
    if (!s.ok()) Decide(absl::StrCat("terminating ", key, " failed: ", s.message()));
    idle_since_.erase(key);
  }
}

void Autoscaler::HoldBackFailedTypes(ScalingInput* input) {
  const auto now = now_();
  std::map<std::string, int> have;
  for (const auto& n : input->nodes) have[n.node_type]++;
  for (auto& t : input->types) {
    auto f = failures_.find(t.name);
    if (f == failures_.end() || f->second.in_a_row == 0 || now >= f->second.retry_at) continue;
    // No new nodes of this type until retry_at: its limit is what it has.
    t.max_workers = std::min(t.max_workers, have[t.name]);
    t.min_workers = std::min(t.min_workers, t.max_workers);
    std::string why = absl::StrCat(t.name, ": ", f->second.in_a_row, " node(s) failed in a row (last: ", f->second.last,
                                   "); launching again in ", Seconds(f->second.retry_at - now) + 1, " s");
    if (why.substr(0, why.rfind(';')) != held_back_[t.name]) {
      Decide(why);
      held_back_[t.name] = why.substr(0, why.rfind(';'));
    }
  }
}

absl::Status Autoscaler::Update() {
  auto fail = [this](const absl::Status& s) {
    if (last_error_ != s.ToString()) spdlog::warn("autoscaler: {}", s.ToString());
    last_error_ = s.ToString();
    cluster_->PublishStatus(StatusJson().dump()).IgnoreError();
    return s;
  };
  auto cluster = cluster_->Read();
  if (!cluster.ok()) return fail(absl::Status(cluster.status().code(), "cannot read the cluster's state: " + cluster.status().ToString()));
  auto listed = provider_->ListNodes();
  if (!listed.ok()) return fail(absl::Status(listed.status().code(), "cannot list the provider's nodes: " + listed.status().ToString()));
  last_error_.clear();
  ForgetStaleLaunches(*listed);  // failed nodes included: they did appear

  std::vector<ProviderNode> nodes;
  std::vector<std::string> failed;
  std::vector<std::string> oom_killed_types;
  const auto now = now_();
  for (auto& n : *listed) {
    if (n.state == ProviderNodeState::kFailed && n.kind == NodeKind::kWorker) {
      Decide(absl::StrCat("terminate ", n.id, " (", n.node_type, "): failed: ", n.failure));
      failed.push_back(n.id);
      TypeFailures& f = failures_[n.node_type];
      f.in_a_row++;
      f.last = n.failure;
      auto pause = options_.failure_backoff * (1LL << std::min(f.in_a_row - 1, 16));
      f.retry_at = now + std::min<std::chrono::milliseconds>(pause, options_.max_failure_backoff);
      if (n.failure.find("OOMKilled") != std::string::npos) oom_killed_types.push_back(n.node_type);
      continue;
    }
    auto seen = first_seen_.find(n.id);
    if (seen != first_seen_.end() && now - seen->second > options_.join_timeout) {
      Decide(absl::StrCat("terminate ", n.id, " (", n.node_type, "): its raylet did not join within ",
                          Seconds(options_.join_timeout), " s"));
      failed.push_back(n.id);
      first_seen_.erase(seen);
      continue;
    }
    nodes.push_back(std::move(n));
  }
  if (!failed.empty()) provider_->TerminateNodes(failed).IgnoreError();

  ScalingInput input = BuildInput(*cluster, nodes);
  if (rules_) ApplyMetricRules(oom_killed_types, &input);
  HoldBackFailedTypes(&input);
  ScalingPlan plan = PlanScaling(input);
  std::string reasons = absl::StrJoin(plan.reasons, "\n");
  if (reasons != last_reasons_) {
    for (const auto& r : plan.reasons) Decide(r);
    last_reasons_ = reasons;
  }
  Execute(plan, *cluster, nodes);
  last_plan_ = std::move(plan);
  cluster_->PublishStatus(StatusJson().dump()).IgnoreError();
  return absl::OkStatus();
}

nlohmann::json Autoscaler::StatusJson() const {
  const auto now = now_();
  nlohmann::json out;
  out["cluster_name"] = options_.config.cluster_name;
  out["nodes"] = last_nodes_;
  nlohmann::json pending = nlohmann::json::object();
  for (const auto& [id, launch] : launches_) pending[launch.node_type] = pending.value(launch.node_type, 0) + launch.count;
  out["pending_launches"] = pending;
  nlohmann::json decisions = nlohmann::json::array();
  for (const auto& [at, what] : decisions_) decisions.push_back({{"ago_s", Seconds(now - at)}, {"what", what}});
  out["decisions"] = decisions;
  out["infeasible"] = last_plan_.infeasible;
  if (!last_error_.empty()) out["error"] = last_error_;
  return out;
}

}  // namespace orb::autoscaler

#include "autoscaler/cluster_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/session.h"
#include "autoscaler/yaml_json.h"

namespace orb::autoscaler {
namespace {

// Reads a YAML tree against the schema, failing with the line of the offending node.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  absl::Status Error(const YAML::Node& at, const std::string& what) const {
    int line = at.Mark().line >= 0 ? at.Mark().line + 1 : 0;
    return absl::InvalidArgumentError(absl::StrCat(source_, line > 0 ? absl::StrCat(" line ", line) : "", ": ", what));
  }

  absl::Status CheckKeys(const YAML::Node& map, const std::string& where, const std::set<std::string>& allowed) const {
    if (!map.IsMap()) return Error(map, where + " must be a mapping");
    for (const auto& entry : map) {
      std::string key = entry.first.as<std::string>();
      if (allowed.count(key)) continue;
      std::string hint;
      for (const auto& a : allowed) {
        if (Close(a, key)) hint = " (did you mean '" + a + "'?)";
      }
      return Error(entry.first, "unknown key '" + key + "' in " + where + hint);
    }
    return absl::OkStatus();
  }

  template <class T>
  absl::Status Get(const YAML::Node& map, const std::string& key, const std::string& where, T* out) const {
    YAML::Node v = map[key];
    if (!v) return absl::OkStatus();
    if (!v.IsScalar()) return Error(v, where + "." + key + " must be a " + TypeName<T>());
    try {
      *out = v.as<T>();
    } catch (const YAML::Exception&) {
      return Error(v, where + "." + key + " must be a " + TypeName<T>() + ", not '" + v.Scalar() + "'");
    }
    return absl::OkStatus();
  }

 private:
  template <class T>
  static std::string TypeName() {
    if constexpr (std::is_same_v<T, int>) return "whole number";
    if constexpr (std::is_same_v<T, double>) return "number";
    return "string";
  }
  // One edit apart, or differing only by a plural s.
  static bool Close(const std::string& a, const std::string& b) {
    if (a == b + "s" || b == a + "s") return true;
    if (a.size() != b.size()) return false;
    int diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff += a[i] != b[i];
    return diff == 1;
  }

  std::string source_;
};

#define RETURN_IF_ERROR(expr)       \
  do {                              \
    absl::Status _s = (expr);       \
    if (!_s.ok()) return _s;        \
  } while (0)

absl::Status ReadResources(const Reader& r, const YAML::Node& node, const std::string& where,
                           std::map<std::string, double>* out) {
  if (!node) return absl::OkStatus();
  if (!node.IsMap()) return r.Error(node, where + " must be a mapping of resource names to amounts");
  for (const auto& entry : node) {
    std::string name = entry.first.as<std::string>();
    double amount;
    try {
      amount = entry.second.as<double>();
    } catch (const YAML::Exception&) {
      return r.Error(entry.second, where + "." + name + " must be a number");
    }
    if (!std::isfinite(amount) || amount < 0 || amount > ResourceSet::kMaxAmount) {
      return r.Error(entry.second, where + "." + name + " must be between 0 and 1e14");
    }
    (*out)[name] = amount;
  }
  return absl::OkStatus();
}

absl::Status ReadNodeType(const Reader& r, const std::string& name, const YAML::Node& node, NodeTypeConfig* t) {
  std::string where = "available_node_types." + name;
  RETURN_IF_ERROR(r.CheckKeys(node, where, {"resources", "labels", "min_workers", "max_workers", "warm_pool", "pod_template",
                                                "node_config"}));
  t->name = name;
  RETURN_IF_ERROR(ReadResources(r, node["resources"], where + ".resources", &t->resources));
  if (YAML::Node labels = node["labels"]) {
    if (!labels.IsMap()) return r.Error(labels, where + ".labels must be a mapping of strings");
    for (const auto& e : labels) t->labels[e.first.as<std::string>()] = e.second.as<std::string>();
  }
  RETURN_IF_ERROR(r.Get(node, "min_workers", where, &t->min_workers));
  RETURN_IF_ERROR(r.Get(node, "max_workers", where, &t->max_workers));
  if (t->min_workers < 0 || t->max_workers < 0) return r.Error(node, where + ": min_workers and max_workers must be >= 0");
  if (t->min_workers > t->max_workers) {
    return r.Error(node["min_workers"], absl::StrCat(where, ": min_workers ", t->min_workers, " is above max_workers ",
                                                     t->max_workers));
  }
  RETURN_IF_ERROR(r.Get(node, "warm_pool", where, &t->warm_pool));
  if (t->warm_pool < 0 || t->warm_pool > t->max_workers) {
    return r.Error(node["warm_pool"], absl::StrCat(where, ": warm_pool ", t->warm_pool, " must be between 0 and max_workers ",
                                                   t->max_workers));
  }
  YAML::Node pod = node["pod_template"] ? node["pod_template"] : node["node_config"];  // node_config: Ray's name
  if (pod) {
    if (!pod.IsMap()) return r.Error(pod, where + ".pod_template must be a mapping (a Pod's fields)");
    t->pod_template = YamlToJson(pod);
  }
  return absl::OkStatus();
}

absl::Status ReadProvider(const Reader& r, const YAML::Node& node, ProviderConfig* p) {
  if (!node) return absl::OkStatus();
  RETURN_IF_ERROR(r.CheckKeys(node, "provider", {"type", "namespace", "server", "kubeconfig", "context", "token_secret", "service_account",
                                                "image"}));
  RETURN_IF_ERROR(r.Get(node, "type", "provider", &p->type));
  if (p->type != "local" && p->type != "kubernetes") {
    return r.Error(node["type"], "provider.type must be 'local' or 'kubernetes', not '" + p->type + "'");
  }
  RETURN_IF_ERROR(r.Get(node, "namespace", "provider", &p->namespace_));
  RETURN_IF_ERROR(r.Get(node, "server", "provider", &p->server));
  RETURN_IF_ERROR(r.Get(node, "kubeconfig", "provider", &p->kubeconfig));
  RETURN_IF_ERROR(r.Get(node, "context", "provider", &p->context));
  RETURN_IF_ERROR(r.Get(node, "token_secret", "provider", &p->token_secret));
  RETURN_IF_ERROR(r.Get(node, "image", "provider", &p->image));
  RETURN_IF_ERROR(r.Get(node, "service_account", "provider", &p->service_account));
  return absl::OkStatus();
}

std::chrono::milliseconds Millis(double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); }

absl::Status ReadSeconds(const Reader& r, const YAML::Node& map, const std::string& key, const std::string& where,
                         std::chrono::milliseconds* out) {
  double seconds = -1;
  RETURN_IF_ERROR(r.Get(map, key, where, &seconds));
  if (map[key] && seconds <= 0) return r.Error(map[key], where + "." + key + " must be above 0");
  if (seconds > 0) *out = Millis(seconds);
  return absl::OkStatus();
}

// A list of rules, each a mapping read by `read`.
template <class Rule, class Read>
absl::Status ReadRuleList(const Reader& r, const YAML::Node& node, const std::string& where, Read read,
                          std::vector<Rule>* out) {
  if (!node) return absl::OkStatus();
  if (!node.IsSequence()) return r.Error(node, where + " must be a list of rules");
  for (size_t i = 0; i < node.size(); ++i) {
    Rule rule;
    std::string at = where + "[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(read(node[i], at, &rule));
    if (rule.node_type.empty()) return r.Error(node[i], at + ".node_type is required");
    out->push_back(std::move(rule));
  }
  return absl::OkStatus();
}

absl::Status ReadMetricRules(const Reader& r, const YAML::Node& node, MetricRulesConfig* m) {
  if (!node) return absl::OkStatus();
  RETURN_IF_ERROR(r.CheckKeys(node, "metric_rules", {"prometheus", "scale_out", "scale_in", "replace_on_oom", "forecast"}));
  if (YAML::Node p = node["prometheus"]) {
    RETURN_IF_ERROR(r.CheckKeys(p, "metric_rules.prometheus", {"url", "query", "type_label"}));
    PrometheusConfig prom;
    RETURN_IF_ERROR(r.Get(p, "url", "metric_rules.prometheus", &prom.url));
    if (prom.url.empty()) return r.Error(p, "metric_rules.prometheus.url is required");
    RETURN_IF_ERROR(r.Get(p, "query", "metric_rules.prometheus", &prom.query));
    RETURN_IF_ERROR(r.Get(p, "type_label", "metric_rules.prometheus", &prom.type_label));
    m->prometheus = prom;
  }
  RETURN_IF_ERROR(ReadRuleList<ScaleOutRule>(
      r, node["scale_out"], "metric_rules.scale_out",
      [&](const YAML::Node& n, const std::string& at, ScaleOutRule* rule) -> absl::Status {
        RETURN_IF_ERROR(r.CheckKeys(n, at, {"node_type", "utilisation_above", "for_s", "add_nodes"}));
        RETURN_IF_ERROR(r.Get(n, "node_type", at, &rule->node_type));
        RETURN_IF_ERROR(r.Get(n, "utilisation_above", at, &rule->utilisation_above));
        RETURN_IF_ERROR(ReadSeconds(r, n, "for_s", at, &rule->for_time));
        RETURN_IF_ERROR(r.Get(n, "add_nodes", at, &rule->add_nodes));
        if (rule->add_nodes < 1) return r.Error(n["add_nodes"], at + ".add_nodes must be at least 1");
        return absl::OkStatus();
      },
      &m->scale_out));
  RETURN_IF_ERROR(ReadRuleList<ScaleInRule>(
      r, node["scale_in"], "metric_rules.scale_in",
      [&](const YAML::Node& n, const std::string& at, ScaleInRule* rule) -> absl::Status {
        RETURN_IF_ERROR(r.CheckKeys(n, at, {"node_type", "utilisation_below", "for_s"}));
        RETURN_IF_ERROR(r.Get(n, "node_type", at, &rule->node_type));
        RETURN_IF_ERROR(r.Get(n, "utilisation_below", at, &rule->utilisation_below));
        return ReadSeconds(r, n, "for_s", at, &rule->for_time);
      },
      &m->scale_in));
  if (YAML::Node o = node["replace_on_oom"]) {
    RETURN_IF_ERROR(r.CheckKeys(o, "metric_rules.replace_on_oom", {"oom_kills", "window_s"}));
    OomRule rule;
    RETURN_IF_ERROR(r.Get(o, "oom_kills", "metric_rules.replace_on_oom", &rule.oom_kills));
    if (rule.oom_kills < 1) return r.Error(o["oom_kills"], "metric_rules.replace_on_oom.oom_kills must be at least 1");
    RETURN_IF_ERROR(ReadSeconds(r, o, "window_s", "metric_rules.replace_on_oom", &rule.window));
    m->replace_on_oom = rule;
  }
  return ReadRuleList<ForecastRule>(
      r, node["forecast"], "metric_rules.forecast",
      [&](const YAML::Node& n, const std::string& at, ForecastRule* rule) -> absl::Status {
        RETURN_IF_ERROR(r.CheckKeys(n, at, {"node_type", "sample_s", "season_s", "horizon_s", "alpha", "beta", "gamma"}));
        RETURN_IF_ERROR(r.Get(n, "node_type", at, &rule->node_type));
        RETURN_IF_ERROR(ReadSeconds(r, n, "sample_s", at, &rule->sample));
        RETURN_IF_ERROR(ReadSeconds(r, n, "season_s", at, &rule->season));
        RETURN_IF_ERROR(ReadSeconds(r, n, "horizon_s", at, &rule->horizon));
        RETURN_IF_ERROR(r.Get(n, "alpha", at, &rule->alpha));
        RETURN_IF_ERROR(r.Get(n, "beta", at, &rule->beta));
        RETURN_IF_ERROR(r.Get(n, "gamma", at, &rule->gamma));
        for (double f : {rule->alpha, rule->beta, rule->gamma}) {
          if (f < 0 || f > 1) return r.Error(n, at + ": alpha, beta and gamma must be between 0 and 1");
        }
        if (rule->season < rule->sample) return r.Error(n, at + ": season_s must be at least sample_s");
        return absl::OkStatus();
      },
      &m->forecast);
}

// Every rule names a node type of the config.
absl::Status CheckRuleTypes(const Reader& r, const YAML::Node& root, const ClusterConfig& c) {
  std::vector<std::string> names;
  for (const auto& rule : c.metric_rules.scale_out) names.push_back(rule.node_type);
  for (const auto& rule : c.metric_rules.scale_in) names.push_back(rule.node_type);
  for (const auto& rule : c.metric_rules.forecast) names.push_back(rule.node_type);
  for (const auto& name : names) {
    if (!c.FindType(name) || name == c.head_node_type) {
      return r.Error(root["metric_rules"], "metric_rules: '" + name + "' is not a worker node type of available_node_types");
    }
  }
  return absl::OkStatus();
}

}  // namespace

const NodeTypeConfig* ClusterConfig::FindType(const std::string& name) const {
  for (const auto& t : node_types) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string ClusterConfig::NodeTypesJson() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& t : node_types) {
    if (t.name == head_node_type) continue;
    out[t.name] = {{"resources", t.resources}, {"labels", t.labels}, {"min_workers", t.min_workers},
                   {"max_workers", t.max_workers}, {"warm_pool", t.warm_pool}};
  }
  return out.dump();
}

absl::StatusOr<ClusterConfig> ParseClusterConfig(const std::string& text, const std::string& source) {
  Reader r(source);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, " line ", e.mark.line + 1, ": not valid YAML: ", e.msg));
  }
  if (!root || root.IsNull()) return absl::InvalidArgumentError(source + " is empty");
  ClusterConfig c;
  RETURN_IF_ERROR(r.CheckKeys(root, "the cluster config",
                              {"cluster_name", "max_workers", "upscaling_speed", "idle_timeout_s", "idle_timeout_minutes",
                               "update_interval_s", "provider", "head_node_type", "available_node_types", "head_port",
                               "metric_rules"}));
  RETURN_IF_ERROR(r.Get(root, "cluster_name", "config", &c.cluster_name));
  if (c.cluster_name.empty()) return r.Error(root, "cluster_name is required");
  for (char ch : c.cluster_name) {
    if (!(std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)) || ch == '-')) {
      return r.Error(root["cluster_name"], "cluster_name '" + c.cluster_name +
                                               "' must be lower-case letters, digits and '-' (it names pods)");
    }
  }
  RETURN_IF_ERROR(r.Get(root, "max_workers", "config", &c.max_workers));
  RETURN_IF_ERROR(r.Get(root, "upscaling_speed", "config", &c.upscaling_speed));
  if (c.upscaling_speed <= 0) return r.Error(root["upscaling_speed"], "upscaling_speed must be above 0");
  double seconds = -1;
  RETURN_IF_ERROR(r.Get(root, "idle_timeout_s", "config", &seconds));
  double minutes = -1;
  RETURN_IF_ERROR(r.Get(root, "idle_timeout_minutes", "config", &minutes));
  if (minutes >= 0) seconds = minutes * 60;
  if (seconds >= 0) c.idle_timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  double interval = -1;
  RETURN_IF_ERROR(r.Get(root, "update_interval_s", "config", &interval));
  if (interval > 0) c.update_interval = std::chrono::milliseconds(static_cast<int64_t>(interval * 1000));
  RETURN_IF_ERROR(r.Get(root, "head_port", "config", &c.head_port));
  RETURN_IF_ERROR(ReadProvider(r, root["provider"], &c.provider));
  RETURN_IF_ERROR(r.Get(root, "head_node_type", "config", &c.head_node_type));
  YAML::Node types = root["available_node_types"];
  if (!types || !types.IsMap() || types.size() == 0) {
    return r.Error(types ? types : root, "available_node_types must list at least one node type");
  }
  for (const auto& entry : types) {
    NodeTypeConfig t;
    RETURN_IF_ERROR(ReadNodeType(r, entry.first.as<std::string>(), entry.second, &t));
    c.node_types.push_back(std::move(t));
  }
  if (c.head_node_type.empty()) return r.Error(root, "head_node_type is required (one of available_node_types)");
  if (!c.FindType(c.head_node_type)) {
    return r.Error(root["head_node_type"], "head_node_type '" + c.head_node_type + "' is not in available_node_types");
  }
  RETURN_IF_ERROR(ReadMetricRules(r, root["metric_rules"], &c.metric_rules));
  RETURN_IF_ERROR(CheckRuleTypes(r, root, c));
  return c;
}

absl::StatusOr<ClusterConfig> LoadClusterConfig(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return absl::InvalidArgumentError("cannot read the cluster config " + path);
  return ParseClusterConfig(*text, path);
}

}  // namespace orb::autoscaler

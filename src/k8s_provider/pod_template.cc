#include "k8s_provider/pod_template.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace orb {
namespace {

std::string Number(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return absl::StrCat(v);
}

nlohmann::json EnvValue(const std::string& name, const std::string& value) { return {{"name", name}, {"value", value}}; }

nlohmann::json EnvField(const std::string& name, const std::string& field) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", field}}}}}};
}

// Sets env `name` unless the container already has it.
void AddEnv(nlohmann::json& container, nlohmann::json entry) {
  auto& env = container["env"];
  if (!env.is_array()) env = nlohmann::json::array();
  for (const auto& e : env) {
    if (e.value("name", "") == entry["name"]) return;
  }
  env.push_back(std::move(entry));
}

void AddResourceRequests(nlohmann::json& container, const std::map<std::string, double>& resources) {
  auto& res = container["resources"];
  if (!res.is_object()) res = nlohmann::json::object();
  if (res.contains("requests") || res.contains("limits")) return;  // the template decides
  auto it = resources.find("CPU");
  if (it != resources.end() && it->second > 0) res["requests"]["cpu"] = Number(it->second);
  it = resources.find("memory");
  if (it != resources.end() && it->second > 0) {
    res["requests"]["memory"] = Number(it->second);
    res["limits"]["memory"] = Number(it->second);
  }
  it = resources.find("GPU");
  if (it != resources.end() && it->second > 0) res["limits"]["nvidia.com/gpu"] = Number(std::ceil(it->second));
  if (res.empty()) container.erase("resources");
}

void AddSharedMemory(nlohmann::json& podspec, nlohmann::json& container) {
  auto& mounts = container["volumeMounts"];
  if (!mounts.is_array()) mounts = nlohmann::json::array();
  for (const auto& m : mounts) {
    if (m.value("mountPath", "") == "/dev/shm") return;
  }
  mounts.push_back({{"name", "orb-shm"}, {"mountPath", "/dev/shm"}});
  auto& volumes = podspec["volumes"];
  if (!volumes.is_array()) volumes = nlohmann::json::array();
  volumes.push_back({{"name", "orb-shm"}, {"emptyDir", {{"medium", "Memory"}}}});
}

}  // namespace

std::vector<std::string> ResourceFlags(const std::map<std::string, double>& resources) {
  std::vector<std::string> flags;
  nlohmann::json custom = nlohmann::json::object();
  for (const auto& [name, amount] : resources) {
    if (name == "CPU") {
      flags.insert(flags.end(), {"--num-cpus", Number(amount)});
    } else if (name == "GPU") {
      flags.insert(flags.end(), {"--num-gpus", Number(amount)});
    } else if (name == "memory") {
      flags.insert(flags.end(), {"--memory", Number(amount)});
    } else {
      custom[name] = amount;
    }
  }
  if (!custom.empty()) flags.insert(flags.end(), {"--resources", custom.dump()});
  return flags;
}

nlohmann::json BuildOrbPod(const OrbPodSpec& spec) {
  nlohmann::json pod = spec.pod_template.is_object() ? spec.pod_template : nlohmann::json::object();
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  if (!pod["metadata"].is_object()) pod["metadata"] = nlohmann::json::object();
  auto& podspec = pod["spec"];
  if (!podspec.is_object()) podspec = nlohmann::json::object();
  if (!podspec.contains("restartPolicy")) podspec["restartPolicy"] = "Never";  // a failed node is replaced, not restarted
  auto& containers = podspec["containers"];
  if (!containers.is_array() || containers.empty()) containers = nlohmann::json::array({{{"name", "orb"}}});
  auto& c = containers[0];
  if (!c.contains("name")) c["name"] = "orb";
  if (!c.contains("image")) c["image"] = spec.image;

  if (spec.kind == NodeKind::kWorker) AddEnv(c, EnvValue("ORB_ADDRESS", spec.gcs_address));
  if (!spec.token_secret.empty()) {
    AddEnv(c, {{"name", "ORB_TOKEN"},
               {"valueFrom", {{"secretKeyRef", {{"name", spec.token_secret}, {"key", "token"}}}}}});
  }
  AddEnv(c, EnvField("ORB_POD_NAME", "metadata.name"));
  AddEnv(c, EnvField("ORB_POD_IP", "status.podIP"));
  AddEnv(c, EnvValue("ORB_NODE_TYPE", spec.node_type));
  for (const auto& [k, v] : spec.extra_env) AddEnv(c, EnvValue(k, v));

  if (!c.contains("command")) c["command"] = nlohmann::json::array({"orb"});
  if (!c.contains("args")) {
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [k, v] : spec.labels) labels[k] = v;
    labels[kLabelNodeType] = spec.node_type;
    labels[kLabelProviderNodeId] = "$(ORB_POD_NAME)";  // the kubelet expands it
    std::vector<std::string> args = {"start", "--block", "--node-ip-address", "$(ORB_POD_IP)"};
    if (spec.kind == NodeKind::kHead) {
      args.push_back("--head");
      args.insert(args.end(), spec.head_args.begin(), spec.head_args.end());
    } else {
      args.insert(args.end(), {"--address", "$(ORB_ADDRESS)"});
    }
    for (auto& f : ResourceFlags(spec.resources)) args.push_back(std::move(f));
    args.insert(args.end(), {"--labels", labels.dump()});
    c["args"] = args;
  }
  AddResourceRequests(c, spec.resources);
  AddSharedMemory(podspec, c);
  if (spec.kind == NodeKind::kHead && !spec.service_account.empty() && !podspec.contains("serviceAccountName")) {
    podspec["serviceAccountName"] = spec.service_account;
  }
  return pod;
}

}  // namespace orb

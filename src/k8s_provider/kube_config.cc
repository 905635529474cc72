#include "k8s_provider/kube_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>

#include "absl/strings/escaping.h"
#include "common/session.h"

namespace orb {
namespace {

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// A kubeconfig entry's `name` → its body (`cluster`, `user` or `context`).
YAML::Node FindNamed(const YAML::Node& list, const std::string& name, const char* body) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& item : list) {
    if (item["name"] && item["name"].as<std::string>() == name) return item[body];
  }
  return YAML::Node();
}

// `<field>-data` (base64) or `<field>` (a file, relative to the kubeconfig's directory).
absl::StatusOr<std::string> FileOrData(const YAML::Node& node, const std::string& field, const std::string& base_dir) {
  if (node[field + "-data"]) {
    std::string decoded;
    if (!absl::Base64Unescape(node[field + "-data"].as<std::string>(), &decoded)) {
      return absl::InvalidArgumentError(field + "-data is not base64");
    }
    return decoded;
  }
  if (node[field]) {
    std::string path = node[field].as<std::string>();
    if (!path.empty() && path[0] != '/') path = base_dir + "/" + path;
    auto text = ReadFileToString(path);
    if (!text.ok()) return absl::InvalidArgumentError("cannot read " + field + " " + path);
    return *text;
  }
  return std::string();
}

std::string DefaultKubeconfigPath() {
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::string list = env;
    return list.substr(0, list.find(':'));
  }
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.kube/config";
}

}  // namespace

absl::StatusOr<KubeConfig> LoadInClusterKubeConfig(const std::string& secrets_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port) return absl::NotFoundError("not in a Kubernetes pod (no KUBERNETES_SERVICE_HOST)");
  KubeConfig config;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // an IPv6 address
  config.server = "https://" + h + ":" + port;
  auto token = ReadFileToString(secrets_dir + "/token");
  if (!token.ok()) return absl::NotFoundError("no service account token in " + secrets_dir);
  config.bearer_token = Trimmed(*token);
  if (auto ca = ReadFileToString(secrets_dir + "/ca.crt"); ca.ok()) config.ca_pem = *ca;
  if (auto ns = ReadFileToString(secrets_dir + "/namespace"); ns.ok()) config.namespace_ = Trimmed(*ns);
  return config;
}

absl::StatusOr<KubeConfig> LoadKubeconfigFile(const std::string& given_path, const std::string& context_name) {
  std::string path = given_path.empty() ? DefaultKubeconfigPath() : given_path;
  std::string base_dir = path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
  if (base_dir.empty()) base_dir = ".";
  try {
    YAML::Node root = YAML::LoadFile(path);
    std::string context = context_name;
    if (context.empty() && root["current-context"]) context = root["current-context"].as<std::string>();
    if (context.empty()) return absl::InvalidArgumentError(path + ": no current-context and no context given");
    YAML::Node ctx = FindNamed(root["contexts"], context, "context");
    if (!ctx) return absl::InvalidArgumentError(path + ": no context named '" + context + "'");
    std::string cluster_name = ctx["cluster"] ? ctx["cluster"].as<std::string>() : "";
    YAML::Node cluster = FindNamed(root["clusters"], cluster_name, "cluster");
    if (!cluster || !cluster["server"]) {
      return absl::InvalidArgumentError(path + ": context '" + context + "' names no cluster with a server");
    }
    KubeConfig config;
    config.server = cluster["server"].as<std::string>();
    if (cluster["insecure-skip-tls-verify"]) config.insecure_skip_tls_verify = cluster["insecure-skip-tls-verify"].as<bool>();
    auto ca = FileOrData(cluster, "certificate-authority", base_dir);
    if (!ca.ok()) return absl::InvalidArgumentError(path + ": " + std::string(ca.status().message()));
    config.ca_pem = *ca;
    if (ctx["namespace"]) config.namespace_ = ctx["namespace"].as<std::string>();
    std::string user_name = ctx["user"] ? ctx["user"].as<std::string>() : "";
    YAML::Node user = FindNamed(root["users"], user_name, "user");
    if (user) {
      if (user["token"]) config.bearer_token = user["token"].as<std::string>();
      if (user["tokenFile"]) {
        auto token = ReadFileToString(user["tokenFile"].as<std::string>());
        if (!token.ok()) return absl::InvalidArgumentError(path + ": cannot read tokenFile");
        config.bearer_token = Trimmed(*token);
      }
      auto cert = FileOrData(user, "client-certificate", base_dir);
      auto key = FileOrData(user, "client-key", base_dir);
      if (!cert.ok()) return absl::InvalidArgumentError(path + ": " + std::string(cert.status().message()));
      if (!key.ok()) return absl::InvalidArgumentError(path + ": " + std::string(key.status().message()));
      config.client_cert_pem = *cert;
      config.client_key_pem = *key;
      if (user["exec"] || user["auth-provider"]) {
        return absl::InvalidArgumentError(path + ": user '" + user_name +
                                          "' authenticates by exec or auth-provider, which orb does not run; "
                                          "use a token or a client certificate");
      }
    }
    return config;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError("cannot read kubeconfig " + path + ": " + e.what());
  }
}

absl::StatusOr<KubeConfig> LoadDefaultKubeConfig(const std::string& kubeconfig_path) {
  if (kubeconfig_path.empty()) {
    auto in_cluster = LoadInClusterKubeConfig();
    if (in_cluster.ok() || in_cluster.status().code() != absl::StatusCode::kNotFound) return in_cluster;
  }
  return LoadKubeconfigFile(kubeconfig_path);
}

}  // namespace orb

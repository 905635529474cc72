// Where the Kubernetes API server is and how to authenticate to it: the pod's service
// account inside a cluster, a kubeconfig file outside one (as kubectl reads it).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace orb {

struct KubeConfig {
  std::string server;  // "https://host:port" or, for tests, "http://host:port"
  std::string bearer_token;
  std::string ca_pem;  // the CA that signed the server's certificate; empty: the system's
  bool insecure_skip_tls_verify = false;
  std::string client_cert_pem;  // client-certificate authentication (with client_key_pem)
  std::string client_key_pem;
  std::string namespace_;  // the context's namespace, or the service account's; may be empty
};

// The service account's config: $KUBERNETES_SERVICE_HOST/_PORT and the token, CA and
// namespace under /var/run/secrets/kubernetes.io/serviceaccount (or `secrets_dir`).
// NotFound when not running in a pod.
absl::StatusOr<KubeConfig> LoadInClusterKubeConfig(
    const std::string& secrets_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// A kubeconfig file (`path`; empty: $KUBECONFIG's first file, else ~/.kube/config),
// with `context` or the file's current-context. Supports token, tokenFile, client
// certificates and CAs as files or inline data. InvalidArgument naming what is wrong.
absl::StatusOr<KubeConfig> LoadKubeconfigFile(const std::string& path, const std::string& context = "");

// In a pod the service account, otherwise the kubeconfig file (as client-go does).
absl::StatusOr<KubeConfig> LoadDefaultKubeConfig(const std::string& kubeconfig_path = "");

}  // namespace orb

#include "cli/autoscaling_config.h"

#include <yaml-cpp/yaml.h>

#include "common/node_types.h"
#include "autoscaler/yaml_json.h"
#include "common/rpc.h"
#include "gcs_service.grpc.pb.h"

namespace orb::cli {

absl::Status StoreAutoscalingConfig(const std::string& path, const std::string& gcs_address, const std::string& token) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError("cannot read the autoscaling config " + path + ": " + e.what());
  }
  YAML::Node types = root["available_node_types"];
  if (!types) return absl::InvalidArgumentError(path + " has no available_node_types");
  std::string json = YamlToJson(types).dump();
  if (auto parsed = ParseNodeTypes(json); !parsed.ok()) {
    return absl::InvalidArgumentError(path + ": " + std::string(parsed.status().message()));
  }
  RpcClient<rpc::GcsService> gcs(gcs_address, token);
  rpc::KvPutRequest request;
  request.set_namespace_(kNodeTypesKvNamespace);
  request.set_key(kNodeTypesKvKey);
  request.set_value(json);
  request.set_overwrite(true);
  CallOptions call;
  call.max_attempts = 5;
  auto reply = gcs.CallSync<rpc::KvPutReply>(ORB_RPC(KvPut), request, call);
  if (!reply.ok()) return absl::UnavailableError("cannot store the node types in the GCS: " + reply.status().ToString());
  return absl::OkStatus();
}

}  // namespace orb::cli

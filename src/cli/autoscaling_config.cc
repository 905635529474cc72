#include "cli/autoscaling_config.h"

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "common/node_types.h"
#include "common/rpc.h"
#include "gcs_service.grpc.pb.h"

namespace orb::cli {
namespace {

// A YAML tree as JSON: scalars become numbers or booleans where they read as such.
nlohmann::json ToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& entry : node) out[entry.first.as<std::string>()] = ToJson(entry.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(ToJson(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& text = node.Scalar();
      if (node.Tag() == "!") return text;  // quoted: a string whatever it looks like
      int64_t whole;
      double number;
      bool flag;
      if (YAML::convert<int64_t>::decode(node, whole)) return whole;
      if (YAML::convert<double>::decode(node, number)) return number;
      if (YAML::convert<bool>::decode(node, flag)) return flag;
      return text;
    }
    default:
      return nullptr;
  }
}

}  // namespace

absl::Status StoreAutoscalingConfig(const std::string& path, const std::string& gcs_address, const std::string& token) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError("cannot read the autoscaling config " + path + ": " + e.what());
  }
  YAML::Node types = root["available_node_types"];
  if (!types) return absl::InvalidArgumentError(path + " has no available_node_types");
  std::string json = ToJson(types).dump();
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

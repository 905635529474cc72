#include "autoscaler/yaml_json.h"

#include <yaml-cpp/yaml.h>

namespace orb {

nlohmann::json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& entry : node) out[entry.first.as<std::string>()] = YamlToJson(entry.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(YamlToJson(item));
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

}  // namespace orb

#include "common/node_types.h"

#include <nlohmann/json.hpp>

namespace orb {

absl::StatusOr<std::vector<NodeType>> ParseNodeTypes(const std::string& text) {
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError("available_node_types must map node type names to their settings");
  }
  std::vector<NodeType> types;
  for (const auto& item : parsed.items()) {
    const std::string& name = item.key();
    const nlohmann::json& settings = item.value();
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError("node type '" + name + "': " + why);
    };
    if (!settings.is_object()) return bad("must be a mapping with resources, labels, min_workers and max_workers");
    NodeType type;
    type.name = name;
    if (settings.contains("resources")) {
      auto resources = ResourceSet::ParseJson(settings["resources"].dump());
      if (!resources.ok()) return bad(std::string(resources.status().message()));
      type.resources = *resources;
    }
    if (settings.contains("labels")) {
      if (!settings["labels"].is_object()) return bad("labels must map names to strings");
      for (const auto& [k, v] : settings["labels"].items()) {
        if (!v.is_string()) return bad("label '" + k + "' must be a string");
        type.labels[k] = v.get<std::string>();
      }
    }
    for (const char* field : {"min_workers", "max_workers"}) {
      if (!settings.contains(field)) continue;
      if (!settings[field].is_number_integer() || settings[field].get<int64_t>() < 0) {
        return bad(std::string(field) + " must be a whole number, 0 or more");
      }
    }
    type.min_workers = settings.value("min_workers", 0);
    type.max_workers = settings.value("max_workers", 0);
    if (type.min_workers > type.max_workers) return bad("min_workers is more than max_workers");
    types.push_back(std::move(type));
  }
  return types;
}

const NodeType* FindLaunchableType(const std::vector<NodeType>& types, const ResourceSet& resources,
                                   const std::function<bool(const std::map<std::string, std::string>&)>& labels_match) {
  for (const auto& type : types) {
    if (type.max_workers > 0 && type.resources.Contains(resources) && labels_match(type.labels)) return &type;
  }
  return nullptr;
}

}  // namespace orb

// YAML read as JSON (for configs whose parts are handed on as JSON, such as pod
// templates and node types).
#pragma once

#include <nlohmann/json.hpp>

namespace YAML {
class Node;
}  // namespace YAML

namespace orb {

// Scalars become numbers or booleans where they read as such, unless quoted.
nlohmann::json YamlToJson(const YAML::Node& node);

}  // namespace orb

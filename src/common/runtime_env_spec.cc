#include "common/runtime_env_spec.h"

#include <filesystem>
#include <nlohmann/json.hpp>

namespace orb {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError("runtime_env field '" + field + "' " + why);
}

}  // namespace

absl::StatusOr<RuntimeEnvSpec> ParseRuntimeEnv(const std::string& json_text) {
  RuntimeEnvSpec spec;
  if (json_text.empty()) return spec;
  json parsed = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError("a runtime_env must be a JSON object, got: " + json_text.substr(0, 200));
  }
  for (const auto& [field, value] : parsed.items()) {
    if (field == "env_vars") {
      if (!value.is_object()) return Bad(field, "must map names to strings");
      for (const auto& [name, v] : value.items()) {
        if (!v.is_string()) return Bad(field, "must map names to strings ('" + name + "' is " + v.type_name() + ")");
        if (name.empty() || name.find('=') != std::string::npos) return Bad(field, "has a bad variable name '" + name + "'");
        spec.env_vars[name] = v.get<std::string>();
      }
    } else if (field == "working_dir") {
      if (!value.is_string() || value.get<std::string>().empty()) return Bad(field, "must be a directory path");
      spec.working_dir = value.get<std::string>();
      if (spec.working_dir.find("://") != std::string::npos) {
        return Bad(field, "must be a directory on the nodes; URIs (" + spec.working_dir + ") are not fetched by orb");
      }
    } else if (field == "code_search_path") {
      std::vector<std::string> paths;
      if (value.is_string()) {
        paths.push_back(value.get<std::string>());
      } else if (value.is_array()) {
        for (const auto& p : value) {
          if (!p.is_string()) return Bad(field, "must be a path or a list of paths");
          paths.push_back(p.get<std::string>());
        }
      } else {
        return Bad(field, "must be a path or a list of paths");
      }
      spec.code_search_path = std::move(paths);
    } else {
      return Bad(field, "is not supported by orb (supported: env_vars, working_dir, code_search_path)");
    }
  }
  return spec;
}

std::string SerializeRuntimeEnv(const RuntimeEnvSpec& spec) {
  if (spec.empty()) return "";
  json out = json::object();  // keys sorted: one text per environment
  if (!spec.env_vars.empty()) out["env_vars"] = spec.env_vars;
  if (!spec.working_dir.empty()) out["working_dir"] = spec.working_dir;
  if (!spec.code_search_path.empty()) out["code_search_path"] = spec.code_search_path;
  return out.dump();
}

RuntimeEnvSpec MergeRuntimeEnv(const RuntimeEnvSpec& parent, const RuntimeEnvSpec& child) {
  RuntimeEnvSpec merged = parent;
  for (const auto& [k, v] : child.env_vars) merged.env_vars[k] = v;
  if (!child.working_dir.empty()) merged.working_dir = child.working_dir;
  if (!child.code_search_path.empty()) merged.code_search_path = child.code_search_path;
  return merged;
}

void MakePathsAbsolute(RuntimeEnvSpec* spec, const std::string& base_dir) {
  auto absolute = [&](const std::string& p) {
    std::filesystem::path path(p);
    return path.is_absolute() ? p : (std::filesystem::path(base_dir) / path).lexically_normal().string();
  };
  if (!spec->working_dir.empty()) spec->working_dir = absolute(spec->working_dir);
  for (auto& p : spec->code_search_path) p = absolute(p);
}

}  // namespace orb

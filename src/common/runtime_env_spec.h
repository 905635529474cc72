// A runtime environment as orb runs it (see <orb/runtime_env.h> for what users write):
// parsed from its JSON, checked, merged with a parent's, and written back in one
// canonical form, so that equal environments compare equal as strings (workers are
// shared by tasks with the same string).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace orb {

struct RuntimeEnvSpec {
  std::map<std::string, std::string> env_vars;
  std::string working_dir;                    // absolute; empty: inherit
  std::vector<std::string> code_search_path;  // absolute

  bool empty() const { return env_vars.empty() && working_dir.empty() && code_search_path.empty(); }
};

// InvalidArgument naming the field for a malformed value or a field orb does not run.
// Empty text is the empty environment.
absl::StatusOr<RuntimeEnvSpec> ParseRuntimeEnv(const std::string& json_text);
// Canonical JSON; empty for the empty environment.
std::string SerializeRuntimeEnv(const RuntimeEnvSpec& spec);
// `child` over `parent`: the child's working_dir and code_search_path win when set;
// env_vars are merged, the child's winning per key.
RuntimeEnvSpec MergeRuntimeEnv(const RuntimeEnvSpec& parent, const RuntimeEnvSpec& child);
// Relative paths taken from `base_dir` (the submitting process's current directory).
void MakePathsAbsolute(RuntimeEnvSpec* spec, const std::string& base_dir);

}  // namespace orb

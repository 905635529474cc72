#include "core/task_options_check.h"

#include <cmath>

#include "common/id.h"
#include "common/label_selector.h"
#include "common/resources.h"
#include "common/runtime_env_spec.h"
#include "orb/errors.h"

namespace orb {

void CheckTaskOptions(const internal::TaskOptionsData& options) {
  if (auto s = ResourceSet::Validate(options.resources); !s.ok()) throw Error(std::string(s.message()));
  if (options.max_retries < 0) throw Error("max_retries must be >= 0");
  if (options.num_returns < 1 || options.num_returns > kMaxNumReturns) {
    throw Error("num_returns must be between 1 and " + std::to_string(kMaxNumReturns) + ", not " +
                std::to_string(options.num_returns));
  }
  if (options.memory_growth != 0) {
    if (!(options.memory_growth > 1) || !std::isfinite(options.memory_growth)) {
      throw Error("memory_growth must be more than 1 (or 0: off), not " + std::to_string(options.memory_growth));
    }
    auto memory = options.resources.find("memory");
    if (memory == options.resources.end() || memory->second <= 0) {
      throw Error("memory_growth needs a memory request to grow (set the task's 'memory' resource)");
    }
  }
  if (options.max_memory < 0 || !std::isfinite(options.max_memory)) throw Error("max_memory must be >= 0 bytes");
  for (const std::string* selector : {&options.label_selector, &options.soft_label_selector}) {
    if (auto parsed = LabelSelector::Parse(*selector); !parsed.ok()) throw Error(std::string(parsed.status().message()));
  }
  if (options.strategy == internal::kStrategyNodeAffinity && NodeID::FromHex(options.affinity_node_id).IsNil()) {
    throw Error("node affinity: '" + options.affinity_node_id + "' is not a node ID (32 hex digits)");
  }
  if (!options.placement_group_id.empty() && PlacementGroupID::FromHex(options.placement_group_id).IsNil()) {
    throw Error("placement group ID '" + options.placement_group_id + "' is not 32 hex digits");
  }
  if (auto env = ParseRuntimeEnv(options.runtime_env); !env.ok()) throw RuntimeEnvError(std::string(env.status().message()));
}

void CheckTaskOnlyOptions(const std::string& function_name, const internal::TaskOptionsData& options) {
  CheckTaskOptions(options);
  if (!options.concurrency_group.empty()) {
    throw Error("task '" + function_name + "': concurrency_group is an option of actor calls, not of tasks");
  }
}

void CheckActorOptions(const internal::ActorOptionsData& options) {
  CheckTaskOptions(options.placement);
  if (options.max_concurrency < 1) throw Error("max_concurrency must be at least 1");
  for (const auto& [name, max_concurrency] : options.concurrency_groups) {
    if (name.empty()) throw Error("a concurrency group needs a name");
    if (max_concurrency < 1) {
      throw Error("concurrency group '" + name + "' must run at least 1 call at once, not " +
                  std::to_string(max_concurrency));
    }
  }
  if (options.max_restarts < -1) throw Error("max_restarts must be -1 (no limit) or more");
  if (options.max_task_retries < -1) throw Error("max_task_retries must be -1 (no limit) or more");
}

void CheckPlacementGroupOptions(const PlacementGroupCreationOptions& options) {
  int strategy = static_cast<int>(options.strategy);
  if (options.bundles.empty()) throw Error("a placement group needs at least one bundle");
  if (strategy < 0 || strategy > static_cast<int>(PlacementStrategy::STRICT_SPREAD)) {
    throw Error("unknown placement strategy");
  }
  for (size_t i = 0; i < options.bundles.size(); ++i) {
    if (options.bundles[i].empty()) throw Error("bundle " + std::to_string(i) + " of the placement group has no resources");
    for (const auto& [resource, amount] : options.bundles[i]) {
      if (!(amount > 0) || !std::isfinite(amount)) {
        throw Error("bundle " + std::to_string(i) + " asks for " + std::to_string(amount) + " " + resource +
                    "; amounts must be positive");
      }
    }
  }
}

}  // namespace orb

// What a program asks of a task or actor, checked before anything is sent (the same
// rules on a cluster and in local mode): an orb::Error naming the bad option, or an
// orb::RuntimeEnvError for the runtime environment.
#pragma once

#include "orb/internal/runtime.h"
#include "orb/placement_group.h"

namespace orb {

// The most returns a task may have (num_returns).
constexpr int kMaxNumReturns = 1 << 16;

void CheckTaskOptions(const internal::TaskOptionsData& options);
// A task's options: CheckTaskOptions, and none that only an actor call takes.
void CheckTaskOnlyOptions(const std::string& function_name, const internal::TaskOptionsData& options);
void CheckActorOptions(const internal::ActorOptionsData& options);
void CheckPlacementGroupOptions(const PlacementGroupCreationOptions& options);

}  // namespace orb

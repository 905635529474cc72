// orb::Task(f): builds a task invocation; Remote(args...) submits it.
//
//   orb::ObjectRef<int> r = orb::Task(Plus).SetResource("CPU", 2).Remote(1, 2);
//
// Arguments are values (serialized now) or ObjectRefs (resolved to their values before
// the task runs). Misuse is a compile error: wrong arity or an argument that does not
// convert to the parameter type.
#pragma once

#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "orb/errors.h"
#include "orb/internal/function_registry.h"
#include "orb/object_ref.h"
#include "orb/placement_group.h"
#include "orb/runtime_env.h"
#include "orb/scheduling.h"

namespace orb {
namespace internal {

// Puts a task or actor into bundle `index` of `pg` (-1: any bundle); `capture`: what it
// starts goes into `pg` too (Ray's placement_group_capture_child_tasks).
inline void SetPlacement(TaskOptionsData* options, const PlacementGroup& pg, int index, bool capture) {
  if (pg.Empty()) throw Error("SetPlacementGroup: the placement group is empty (default-constructed)");
  if (index < -1 || index >= static_cast<int>(pg.GetBundles().size())) {
    throw Error("SetPlacementGroup: bundle index " + std::to_string(index) + " is out of range: the group has " +
                std::to_string(pg.GetBundles().size()) + " bundle(s) (use -1 for any)");
  }
  options->placement_group_id = pg.GetID();
  options->bundle_index = index;
  options->capture_child_tasks = capture;
}

template <class T>
struct IsObjectRef : std::false_type {};
template <class T>
struct IsObjectRef<ObjectRef<T>> : std::true_type {};

// An ObjectRef argument for a parameter of its value type is resolved to the value
// before the call (by reference); for a parameter that is itself an ObjectRef, the
// callee gets the reference (and borrows it).
template <class Param, class Arg>
constexpr bool PassedByReference() {
  return IsObjectRef<std::decay_t<Arg>>::value && !IsObjectRef<std::decay_t<Param>>::value;
}

template <class Param, class Arg>
constexpr bool ArgumentFits() {
  using A = std::decay_t<Arg>;
  if constexpr (PassedByReference<Param, Arg>()) {
    return std::is_convertible_v<typename A::ValueType, std::decay_t<Param>>;
  } else {
    return std::is_convertible_v<Arg, std::decay_t<Param>>;
  }
}

template <class Param, class Arg>
ArgData MakeArg(Arg&& arg) {
  ArgData data;
  if constexpr (PassedByReference<Param, Arg>()) {
    data.is_ref = true;
    data.ref = arg.data();
  } else {
    ClearSerializedRefs();
    data.value = Serialize(static_cast<std::decay_t<Param>>(std::forward<Arg>(arg)));
    data.contained_refs = TakeSerializedRefs();
  }
  return data;
}

}  // namespace internal

namespace internal {

// The options every task invocation takes; Derived (a TaskCaller) adds Remote().
template <class Derived>
class TaskOptionsSetters {
 public:
  // Requests `amount` of a resource ("CPU", "GPU", "memory" or a custom name).
  Derived& SetResource(const std::string& name, double amount) {
    options_.resources[name] = amount;
    options_.resources_set = true;
    return Self();
  }
  Derived& SetResources(const ResourceMap& resources) {
    for (const auto& [name, amount] : resources) options_.resources[name] = amount;
    options_.resources_set = true;
    return Self();
  }
  // Reruns the task up to `n` times if its worker or node dies (default 3).
  Derived& SetMaxRetries(int n) {
    options_.max_retries = n;
    return Self();
  }
  // A worker that has run `n` calls of this function ends after the last, so the next
  // runs in a fresh process (Ray's max_calls: memory a library keeps, GPU memory, is
  // given back); 0: no limit.
  Derived& SetMaxCalls(int n) {
    options_.max_calls = n;
    return Self();
  }
  // Reruns it (within the same max_retries) when its code throws, too (Ray's
  // retry_exceptions); the last attempt's exception is what Get throws.
  Derived& SetRetryExceptions(bool retry = true) {
    options_.retry_exceptions = retry;
    return Self();
  }
  // A retry of the task after it was killed for memory (OutOfMemoryError) asks for
  // `factor` times its `memory` request, up to `max_memory_bytes` (0: no cap), so that
  // it runs where that much fits (the autoscaler adds a node type with more memory if no
  // node has it). Needs a `memory` request and retries left (SetMaxRetries).
  Derived& SetMemoryGrowth(double factor, double max_memory_bytes = 0) {
    options_.memory_growth = factor;
    options_.max_memory = max_memory_bytes;
    return Self();
  }
  Derived& SetName(const std::string& name) {
    options_.name = name;
    return Self();
  }
  // Where the task may run (see <orb/scheduling.h>). Default: hybrid.
  Derived& SetSchedulingStrategy(const SchedulingStrategy& strategy) {
    static_assert(std::is_same_v<std::variant_alternative_t<internal::kStrategySpread, SchedulingStrategy>,
                                 SpreadSchedulingStrategy> &&
                  std::is_same_v<std::variant_alternative_t<internal::kStrategyNodeAffinity, SchedulingStrategy>,
                                 NodeAffinitySchedulingStrategy>);
    options_.strategy = static_cast<int>(strategy.index());
    if (auto* affinity = std::get_if<NodeAffinitySchedulingStrategy>(&strategy)) {
      options_.affinity_node_id = affinity->node_id;
      options_.affinity_soft = affinity->soft;
    }
    return Self();
  }
  // Only nodes whose labels match, e.g. "zone in (a,b), gpu != h100, ssd, !spot".
  // A selector that does not parse is an orb::Error at Remote().
  Derived& SetLabelSelector(const std::string& selector) {
    options_.label_selector = selector;
    return Self();
  }
  // Nodes whose labels match are preferred; others are used when they are not available.
  Derived& SetSoftLabelSelector(const std::string& selector) {
    options_.soft_label_selector = selector;
    return Self();
  }
  // Runs in bundle `bundle_index` of `pg` (-1: any bundle), on that bundle's resources.
  // `capture_child_tasks`: the tasks and actors it starts without a placement of their
  // own go into `pg` as well (any bundle), and capture in turn.
  Derived& SetPlacementGroup(const PlacementGroup& pg, int bundle_index = -1, bool capture_child_tasks = false) {
    internal::SetPlacement(&options_, pg, bundle_index, capture_child_tasks);
    return Self();
  }
  // Runs in a worker with this environment, over the job's (see <orb/runtime_env.h>).
  Derived& SetRuntimeEnv(const RuntimeEnv& runtime_env) {
    options_.runtime_env = runtime_env.Serialize();
    return Self();
  }

 protected:
  Derived& Self() { return static_cast<Derived&>(*this); }
  TaskOptionsData options_;
};

}  // namespace internal

template <class F>
class TaskCaller;

template <class R, class... Params>
class TaskCaller<R (*)(Params...)> : public internal::TaskOptionsSetters<TaskCaller<R (*)(Params...)>> {
 public:
  using Function = R (*)(Params...);
  static_assert(!std::is_pointer_v<R> || !std::is_class_v<std::remove_pointer_t<R>>,
                "this function returns a class pointer: it is an actor factory, use orb::Actor(f)");

  explicit TaskCaller(Function f) : name_(internal::FunctionRegistry::Instance().NameOf(internal::FunctionKey(f))) {
    if (name_.empty()) throw Error("function is not registered as remote: add ORB_REMOTE(<function>) at namespace scope");
  }

  template <class... Args>
  ObjectRef<R> Remote(Args&&... args) {
    static_assert(sizeof...(Args) == sizeof...(Params), "wrong number of arguments for this remote function");
    static_assert((internal::ArgumentFits<Params, Args>() && ...),
                  "an argument (or the value type of an ObjectRef argument) does not convert to the parameter type");
    std::vector<internal::ArgData> wire{internal::MakeArg<Params>(std::forward<Args>(args))...};
    return ObjectRef<R>(internal::SubmitTask(name_, std::move(wire), this->options_), internal::AdoptRef{});
  }

 private:
  std::string name_;
};

template <class R, class... Params>
TaskCaller<R (*)(Params...)> Task(R (*f)(Params...)) {
  return TaskCaller<R (*)(Params...)>(f);
}

}  // namespace orb

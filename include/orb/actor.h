// Actors: stateful workers whose methods run in the order each caller submits them.
//
//   class Counter {
//    public:
//     static Counter* Create(int start) { return new Counter{start}; }
//     int Add(int x) { return n += x; }
//     int n;
//   };
//   ORB_REMOTE(Counter::Create, &Counter::Add);
//
//   orb::ActorHandle<Counter> c = orb::Actor(Counter::Create).SetMaxRestarts(1).Remote(10);
//   orb::ObjectRef<int> r = c.Task(&Counter::Add).Remote(5);   // 15
//
// Handles are values: copy them, pass them to tasks and other actors as arguments.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "orb/errors.h"
#include "orb/internal/function_registry.h"
#include "orb/object_ref.h"
#include "orb/scheduling.h"
#include "orb/task_caller.h"

namespace orb {

namespace internal {
std::string HexOf(const std::string& binary);
}  // namespace internal

namespace internal {

// The options an actor call takes; Derived (an ActorTaskCaller) adds Remote().
template <class Derived>
class ActorCallSetters {
 public:
  // A name for this call (shown in task listings and errors).
  Derived& SetName(const std::string& name) {
    options_.name = name;
    return static_cast<Derived&>(*this);
  }
  // Accepted as in Ray and checked like a task's; a call runs on its actor's resources.
  Derived& SetResource(const std::string& name, double amount) {
    options_.resources[name] = amount;
    options_.resources_set = true;
    return static_cast<Derived&>(*this);
  }
  Derived& SetResources(const ResourceMap& resources) {
    for (const auto& [name, amount] : resources) SetResource(name, amount);
    return static_cast<Derived&>(*this);
  }
  // Runs in the actor's concurrency group `name` (see AddConcurrencyGroup); a group the
  // actor does not have fails the call, naming the groups it has.
  Derived& SetConcurrencyGroup(const std::string& name) {
    options_.concurrency_group = name;
    return static_cast<Derived&>(*this);
  }

 protected:
  TaskOptionsData options_;
};

}  // namespace internal

template <class R, class... Params>
class ActorTaskCaller : public internal::ActorCallSetters<ActorTaskCaller<R, Params...>> {
 public:
  ActorTaskCaller(std::string actor_id, std::string method) : actor_id_(std::move(actor_id)), method_(std::move(method)) {}

  template <class... Args>
  ObjectRef<R> Remote(Args&&... args) {
    static_assert(sizeof...(Args) == sizeof...(Params), "wrong number of arguments for this actor method");
    static_assert((internal::ArgumentFits<Params, Args>() && ...),
                  "an argument (or the value type of an ObjectRef argument) does not convert to the parameter type");
    std::vector<internal::ArgData> wire{internal::MakeArg<Params>(std::forward<Args>(args))...};
    return ObjectRef<R>(internal::SubmitActorTask(actor_id_, method_, std::move(wire), this->options_),
                        internal::AdoptRef{});
  }

 private:
  std::string actor_id_;
  std::string method_;
};

template <class T>
class ActorHandle {
 public:
  ActorHandle() = default;
  // From a binary actor ID (what orb::GetActor and deserialization use).
  explicit ActorHandle(std::string actor_id) : id_(std::move(actor_id)) {}

  // The actor's ID, hex.
  std::string ID() const { return internal::HexOf(id_); }

  template <class R, class C, class... Params>
  ActorTaskCaller<R, Params...> Task(R (C::*method)(Params...)) const {
    static_assert(std::is_base_of_v<C, T>, "the method belongs to another class");
    return ActorTaskCaller<R, Params...>(id_, MethodName(method));
  }
  template <class R, class C, class... Params>
  ActorTaskCaller<R, Params...> Task(R (C::*method)(Params...) const) const {
    static_assert(std::is_base_of_v<C, T>, "the method belongs to another class");
    return ActorTaskCaller<R, Params...>(id_, MethodName(method));
  }

  // Kills the actor's process. no_restart (default): the actor is dead for good and
  // later calls throw ActorDiedError; otherwise it restarts if it has restarts left.
  void Kill(bool no_restart = true) const { internal::KillActor(id_, no_restart); }

  bool operator==(const ActorHandle& other) const { return id_ == other.id_; }

  MSGPACK_DEFINE(id_);

 private:
  template <class M>
  static std::string MethodName(M method) {
    std::string name = internal::FunctionRegistry::Instance().NameOf(internal::FunctionKey(method));
    if (name.empty()) throw Error("actor method is not registered: add it to ORB_REMOTE(...) at namespace scope");
    return name;
  }

  std::string id_;
};

namespace internal {

// The options an actor's creation takes; Derived (an ActorCreator) adds Remote().
template <class Derived>
class ActorOptionsSetters {
 public:
  // Findable with orb::GetActor<T>(name) in the namespace (default: the job's).
  Derived& SetName(const std::string& name, const std::string& ray_namespace = "") {
    options_.name = name;
    options_.ray_namespace = ray_namespace;
    return static_cast<Derived&>(*this);
  }
  // Restarts (constructor rerun, on a live node) after the process dies; -1: no limit.
  Derived& SetMaxRestarts(int n) {
    options_.max_restarts = n;
    return static_cast<Derived&>(*this);
  }
  // Calls in flight when the actor died are sent again after a restart, up to n times
  // each (at-least-once); 0 (default): they fail with ActorDiedError (at-most-once).
  Derived& SetMaxTaskRetries(int n) {
    options_.max_task_retries = n;
    return static_cast<Derived&>(*this);
  }
  // Runs up to n calls at once on a thread pool (order between calls is then not kept).
  Derived& SetMaxConcurrency(int n) {
    options_.max_concurrency = n;
    return static_cast<Derived&>(*this);
  }
  // A concurrency group: calls made with SetConcurrencyGroup(name) run up to
  // `max_concurrency` at once on threads of their own, apart from the other groups'
  // and from the calls naming none (those run max_concurrency at once).
  Derived& AddConcurrencyGroup(const std::string& name, int max_concurrency) {
    options_.concurrency_groups[name] = max_concurrency;
    return static_cast<Derived&>(*this);
  }
  Derived& SetLifetime(ActorLifetime lifetime) {
    options_.detached = lifetime == ActorLifetime::DETACHED;
    options_.lifetime_set = true;
    return static_cast<Derived&>(*this);
  }
  // Resources held for the actor's whole life (default: none).
  Derived& SetResource(const std::string& name, double amount) {
    options_.placement.resources[name] = amount;
    options_.placement.resources_set = true;
    return static_cast<Derived&>(*this);
  }
  Derived& SetResources(const ResourceMap& resources) {
    for (const auto& [name, amount] : resources) SetResource(name, amount);
    return static_cast<Derived&>(*this);
  }
  Derived& SetSchedulingStrategy(const SchedulingStrategy& strategy) {
    options_.placement.strategy = static_cast<int>(strategy.index());
    if (auto* affinity = std::get_if<NodeAffinitySchedulingStrategy>(&strategy)) {
      options_.placement.affinity_node_id = affinity->node_id;
      options_.placement.affinity_soft = affinity->soft;
    }
    return static_cast<Derived&>(*this);
  }
  Derived& SetLabelSelector(const std::string& selector) {
    options_.placement.label_selector = selector;
    return static_cast<Derived&>(*this);
  }
  // Lives in bundle `bundle_index` of `pg` (-1: any); removing the group ends it.
  // `capture_child_tasks`: the tasks and actors its methods start without a placement of
  // their own go into `pg` as well.
  Derived& SetPlacementGroup(const PlacementGroup& pg, int bundle_index = -1, bool capture_child_tasks = false) {
    internal::SetPlacement(&options_.placement, pg, bundle_index, capture_child_tasks);
    return static_cast<Derived&>(*this);
  }
  // Runs in a worker with this environment, over the job's (see <orb/runtime_env.h>).
  Derived& SetRuntimeEnv(const RuntimeEnv& runtime_env) {
    options_.placement.runtime_env = runtime_env.Serialize();
    return static_cast<Derived&>(*this);
  }

 protected:
  ActorOptionsData options_;
};

}  // namespace internal

template <class F>
class ActorCreator;

template <class T, class... Params>
class ActorCreator<T* (*)(Params...)> : public internal::ActorOptionsSetters<ActorCreator<T* (*)(Params...)>> {
 public:
  using Factory = T* (*)(Params...);

  explicit ActorCreator(Factory f) : name_(internal::FunctionRegistry::Instance().NameOf(internal::FunctionKey(f))) {
    if (name_.empty()) throw Error("actor factory is not registered: add ORB_REMOTE(<factory>) at namespace scope");
  }

  template <class... Args>
  ActorHandle<T> Remote(Args&&... args) {
    static_assert(sizeof...(Args) == sizeof...(Params), "wrong number of arguments for this actor factory");
    static_assert((internal::ArgumentFits<Params, Args>() && ...),
                  "an argument (or the value type of an ObjectRef argument) does not convert to the parameter type");
    std::vector<internal::ArgData> wire{internal::MakeArg<Params>(std::forward<Args>(args))...};
    return ActorHandle<T>(internal::CreateActor(name_, std::move(wire), this->options_));
  }

 private:
  std::string name_;
};

template <class T, class... Params>
ActorCreator<T* (*)(Params...)> Actor(T* (*factory)(Params...)) {
  return ActorCreator<T* (*)(Params...)>(factory);
}

// The live actor named `name` in `ray_namespace` (default: the job's), if any.
template <class T>
std::optional<ActorHandle<T>> GetActor(const std::string& name, const std::string& ray_namespace = "") {
  std::string id = internal::GetNamedActor(name, ray_namespace);
  if (id.empty()) return std::nullopt;
  return ActorHandle<T>(id);
}

// Inside an actor method: ends the actor (no restart) once this call returns. Outside
// an actor it is an orb::Error.
[[noreturn]] inline void ExitActor() {
  if (internal::CurrentActorId().empty()) throw Error("ExitActor() called outside an actor");
  throw internal::ActorExitSignal{};
}

// True in an actor whose constructor ran again after its process died (also inside
// that constructor); false elsewhere.
inline bool WasCurrentActorRestarted() { return internal::WasCurrentActorRestarted(); }

}  // namespace orb

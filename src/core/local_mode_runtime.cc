#include "core/local_mode_runtime.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <thread>

#include "common/id.h"
#include "common/runtime_env_spec.h"
#include "core/exception_names.h"
#include "core/task_options_check.h"
#include "orb/internal/function_registry.h"

namespace orb {

struct LocalModeRuntime::Actor {
  enum class State { kStarting, kAlive, kDead };
  std::string id;  // binary
  std::string factory;
  std::string name;
  std::string ns;
  std::shared_ptr<std::vector<internal::ArgData>> args;  // kept for restarts
  int max_restarts = 0;
  std::unique_ptr<LocalExecutor> executor;  // the default concurrency group's
  std::map<std::string, std::unique_ptr<LocalExecutor>> groups;  // named concurrency groups
  std::mutex mu;
  std::condition_variable cv;
  State state = State::kStarting;    // guarded by mu
  std::shared_ptr<void> instance;    // guarded by mu
  std::string death;                 // guarded by mu
  int num_restarts = 0;              // guarded by mu
  bool restarted = false;            // the instance is not the first; guarded by mu
};

namespace {

constexpr char kOwner[] = "local";  // every object's owner: this process

// What the current thread runs: a task (hex ID) and the actor it belongs to.
thread_local std::string current_task;
thread_local std::string current_actor;  // binary
thread_local bool current_restarted = false;

class BytesBuffer : public internal::ValueBuffer {
 public:
  explicit BytesBuffer(std::shared_ptr<const std::string> bytes) : bytes_(std::move(bytes)) {}
  const char* data() const override { return bytes_->data(); }
  size_t size() const override { return bytes_->size(); }

 private:
  std::shared_ptr<const std::string> bytes_;
};


std::chrono::steady_clock::time_point DeadlineFor(int64_t timeout_ms) {
  if (timeout_ms < 0) return std::chrono::steady_clock::time_point::max();
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
}

// Sets the thread's task (and actor) for the scope of one call.
class CallScope {
 public:
  CallScope(std::string actor, bool restarted) {
    current_task = TaskID::FromRandom().Hex();
    current_actor = std::move(actor);
    current_restarted = restarted;
  }
  ~CallScope() {
    current_task.clear();
    current_actor.clear();
    current_restarted = false;
  }
};

}  // namespace

LocalModeRuntime::LocalModeRuntime(const Config& config, const std::string& runtime_env)
    : namespace_(config.ray_namespace.empty() ? RandomUuid() : config.ray_namespace),
      node_id_(NodeID::FromRandom().Hex()),
      job_id_("01000000"),
      num_cpus_(config.num_cpus >= 0 ? config.num_cpus : std::thread::hardware_concurrency()),
      tasks_(std::max(1, static_cast<int>(num_cpus_)), LocalExecutor::Growth::kWhileBlocked) {
  // The job's environment variables are this process's; per-task ones cannot be.
  if (auto env = ParseRuntimeEnv(runtime_env); env.ok()) {
    for (const auto& [name, value] : env->env_vars) ::setenv(name.c_str(), value.c_str(), 1);
  }
}

LocalModeRuntime::~LocalModeRuntime() { Disconnect(); }

std::string LocalModeRuntime::NewObject() {
  std::string id = ObjectID::FromRandom().Binary();
  std::lock_guard<std::mutex> lock(mu_);
  objects_[id].refs = 1;
  return id;
}

void LocalModeRuntime::Complete(const std::string& id, std::shared_ptr<const std::string> bytes,
                                std::exception_ptr error, std::vector<std::string> contained) {
  bool orphan = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(id);
    if (it == objects_.end()) {
      orphan = true;  // nobody holds the result any more
    } else {
      it->second.ready = true;
      it->second.bytes = std::move(bytes);
      it->second.error = error;
      it->second.contained = contained;
      if (it->second.refs == 0) objects_.erase(it);
    }
  }
  if (orphan) ReleaseAll(contained);
  ready_cv_.notify_all();
}

bool LocalModeRuntime::WaitReady(std::unique_lock<std::mutex>& lock, const std::string& id,
                                 std::chrono::steady_clock::time_point deadline) {
  auto ready = [&] {
    auto it = objects_.find(id);
    return it == objects_.end() || it->second.ready;
  };
  if (ready()) return true;
  LocalExecutor::Blocked();  // another thread may run what this one waits for
  bool done = ready_cv_.wait_until(lock, deadline, ready);
  LocalExecutor::Unblocked();
  return done;
}

internal::RefData LocalModeRuntime::PutWith(size_t size, const std::function<void(char*)>& write) {
  internal::ClearSerializedRefs();
  auto bytes = std::make_shared<std::string>(size, '\0');
  write(bytes->data());
  std::vector<std::string> contained;
  for (const auto& ref : internal::TakeSerializedRefs()) contained.push_back(ref.id);
  std::string id = NewObject();
  Complete(id, std::move(bytes), nullptr, std::move(contained));
  return internal::RefData{id, kOwner};
}

std::vector<std::shared_ptr<internal::ValueBuffer>> LocalModeRuntime::Get(const std::vector<internal::RefData>& refs,
                                                                          int64_t timeout_ms) {
  auto deadline = DeadlineFor(timeout_ms);
  std::vector<std::shared_ptr<internal::ValueBuffer>> out;
  std::unique_lock<std::mutex> lock(mu_);
  for (const auto& ref : refs) {
    std::string hex = ObjectID::FromBinary(ref.id).Hex();
    if (!WaitReady(lock, ref.id, deadline)) throw GetTimeoutError("Get timed out waiting for object " + hex);
    auto it = objects_.find(ref.id);
    if (it == objects_.end()) throw ObjectLostError("object " + hex + " is not known here (freed, or from a cluster)");
    if (it->second.error) std::rethrow_exception(it->second.error);
    out.push_back(std::make_shared<BytesBuffer>(it->second.bytes));
  }
  return out;
}

std::vector<bool> LocalModeRuntime::Wait(const std::vector<internal::RefData>& refs, int num_objects,
                                         int64_t timeout_ms) {
  if (num_objects < 0 || static_cast<size_t>(num_objects) > refs.size()) {
    throw Error("Wait: num_objects must be between 0 and the number of refs (" + std::to_string(refs.size()) + ")");
  }
  auto deadline = DeadlineFor(timeout_ms);
  std::vector<bool> ready(refs.size());
  auto count = [&] {
    int n = 0;
    for (size_t i = 0; i < refs.size(); ++i) {
      auto it = objects_.find(refs[i].id);
      ready[i] = it == objects_.end() || it->second.ready;
      n += ready[i];
    }
    return n;
  };
  std::unique_lock<std::mutex> lock(mu_);
  LocalExecutor::Blocked();
  ready_cv_.wait_until(lock, deadline, [&] { return count() >= num_objects; });
  LocalExecutor::Unblocked();
  count();
  return ready;
}

void LocalModeRuntime::AddLocalReference(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(id);
  if (it != objects_.end()) it->second.refs++;
}

void LocalModeRuntime::RemoveLocalReference(const std::string& id) {
  std::vector<std::string> contained;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(id);
    if (it == objects_.end() || --it->second.refs > 0 || !it->second.ready) return;
    contained = std::move(it->second.contained);
    objects_.erase(it);
  }
  ReleaseAll(contained);
}

void LocalModeRuntime::ReleaseAll(const std::vector<std::string>& ids) {
  for (const auto& id : ids) RemoveLocalReference(id);
}

std::vector<std::string> LocalModeRuntime::HoldArgs(const std::vector<internal::ArgData>& args) {
  std::vector<std::string> held;
  for (const auto& arg : args) {
    if (arg.is_ref) {
      AddLocalReference(arg.ref.id);
      held.push_back(arg.ref.id);
    }
    // Refs inside values were held when they were serialized.
    for (const auto& ref : arg.contained_refs) held.push_back(ref.id);
  }
  return held;
}

LocalModeRuntime::Buffers LocalModeRuntime::ResolveArgs(const std::vector<internal::ArgData>& args) {
  Buffers buffers;
  for (const auto& arg : args) {
    if (arg.is_ref) {
      buffers.push_back(Get({arg.ref}, -1)[0]);
    } else {
      buffers.push_back(std::make_shared<BytesBuffer>(std::make_shared<const std::string>(arg.value)));
    }
  }
  return buffers;
}

void LocalModeRuntime::RunAndComplete(const std::string& return_id, const std::string& name,
                                      const std::function<std::string(const Buffers&)>& call,
                                      const std::vector<internal::ArgData>& args) {
  Buffers buffers;
  try {
    buffers = ResolveArgs(args);
  } catch (...) {
    return Complete(return_id, nullptr, std::current_exception(), {});  // a failed dependency's error
  }
  std::exception_ptr error;
  std::string output;
  try {
    output = call(buffers);
  } catch (const ActorDiedError&) {
    error = std::current_exception();
  } catch (const Error& e) {
    error = std::make_exception_ptr(TaskError(name + ": " + e.what()));
  } catch (const std::exception& e) {
    error = std::make_exception_ptr(TaskError(name + ": " + ExceptionTypeName(e) + ": " + e.what()));
  } catch (...) {
    error = std::make_exception_ptr(TaskError(name + ": threw a non-standard exception"));
  }
  std::vector<std::string> contained;
  if (error) {
    internal::ClearSerializedRefs();
  } else {
    for (const auto& ref : internal::TakeSerializedRefs()) contained.push_back(ref.id);
  }
  Complete(return_id, error ? nullptr : std::make_shared<const std::string>(std::move(output)), error,
           std::move(contained));
}

namespace {

void CheckOneReturn(const internal::TaskOptionsData& options) {
  if (options.num_returns != 1) throw Error("local mode runs tasks with one return (num_returns=1)");
}

}  // namespace

std::vector<internal::RefData> LocalModeRuntime::SubmitTask(const std::string& function_name,
                                                            std::vector<internal::ArgData> args,
                                                            const internal::TaskOptionsData& options) {
  CheckTaskOnlyOptions(function_name, options);
  CheckOneReturn(options);
  std::string return_id = NewObject();
  auto shared_args = std::make_shared<std::vector<internal::ArgData>>(std::move(args));
  std::vector<std::string> held = HoldArgs(*shared_args);
  tasks_.Post([this, function_name, return_id, shared_args, held] {
    CallScope scope("", false);
    RunAndComplete(
        return_id, function_name,
        [&](const Buffers& buffers) {
          const internal::Invoker* invoker = internal::FunctionRegistry::Instance().Find(function_name);
          if (!invoker) throw Error("function '" + function_name + "' is not registered (ORB_REMOTE)");
          return (*invoker)(buffers);
        },
        *shared_args);
    ReleaseAll(held);
  });
  return {internal::RefData{return_id, kOwner}};
}

std::shared_ptr<LocalModeRuntime::Actor> LocalModeRuntime::FindActor(const std::string& actor_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = actors_.find(actor_id);
  return it == actors_.end() ? nullptr : it->second;
}

void LocalModeRuntime::ConstructActor(const std::shared_ptr<Actor>& actor, bool restarted) {
  actor->executor->Post([this, actor, restarted] {
    CallScope scope(actor->id, restarted);
    std::string failure;
    std::shared_ptr<void> instance;
    try {
      const internal::ActorFactory* factory = internal::FunctionRegistry::Instance().FindFactory(actor->factory);
      if (!factory) throw Error("actor factory '" + actor->factory + "' is not registered (ORB_REMOTE)");
      instance = (*factory)(ResolveArgs(*actor->args));
    } catch (const std::exception& e) {
      failure = "the constructor failed: " + actor->factory + ": " + ExceptionTypeName(e) + ": " + e.what();
    }
    std::lock_guard<std::mutex> lock(actor->mu);
    if (actor->state == Actor::State::kDead) return;  // killed meanwhile
    if (failure.empty()) {
      actor->instance = std::move(instance);
      actor->restarted = restarted;
      actor->state = Actor::State::kAlive;
    } else {
      actor->state = Actor::State::kDead;
      actor->death = failure;
    }
    actor->cv.notify_all();
  });
}

std::string LocalModeRuntime::CreateActor(const std::string& factory_name, std::vector<internal::ArgData> args,
                                          const internal::ActorOptionsData& options) {
  CheckActorOptions(options);
  auto actor = std::make_shared<Actor>();
  actor->id = ActorID::FromRandom().Binary();
  actor->factory = factory_name;
  actor->name = options.name;
  actor->ns = options.ray_namespace.empty() ? namespace_ : options.ray_namespace;
  actor->args = std::make_shared<std::vector<internal::ArgData>>(std::move(args));
  HoldArgs(*actor->args);  // for the actor's life: restarts read them again
  actor->max_restarts = options.max_restarts;
  actor->executor = std::make_unique<LocalExecutor>(options.max_concurrency, LocalExecutor::Growth::kNever);
  for (const auto& [name, size] : options.concurrency_groups) {
    actor->groups[name] = std::make_unique<LocalExecutor>(size, LocalExecutor::Growth::kNever);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!actor->name.empty()) {
      auto taken = named_actors_.find({actor->ns, actor->name});
      if (taken != named_actors_.end()) {
        auto other = actors_[taken->second];
        std::lock_guard<std::mutex> other_lock(other->mu);
        if (other->state != Actor::State::kDead) {
          throw Error("cannot create actor " + factory_name + ": the name '" + actor->name +
                      "' is taken in namespace '" + actor->ns + "'");
        }
      }
      named_actors_[{actor->ns, actor->name}] = actor->id;
    }
    actors_[actor->id] = actor;
  }
  ConstructActor(actor, false);
  return actor->id;
}

std::vector<internal::RefData> LocalModeRuntime::SubmitActorTask(const std::string& actor_id,
                                                                 const std::string& method_name,
                                                                 std::vector<internal::ArgData> args,
                                                                 const internal::TaskOptionsData& options) {
  if (ActorID::FromBinary(actor_id).IsNil()) throw Error("this actor handle is empty (default-constructed?)");
  CheckTaskOptions(options);
  CheckOneReturn(options);
  std::string return_id = NewObject();
  std::shared_ptr<Actor> actor = FindActor(actor_id);
  if (!actor) {
    Complete(return_id, nullptr,
             std::make_exception_ptr(ActorDiedError("actor " + ActorID::FromBinary(actor_id).Hex() + " is not known")), {});
    return {internal::RefData{return_id, kOwner}};
  }
  LocalExecutor* executor = actor->executor.get();
  if (!options.concurrency_group.empty()) {
    auto group = actor->groups.find(options.concurrency_group);
    if (group == actor->groups.end()) {
      Complete(return_id, nullptr,
               std::make_exception_ptr(Error(method_name + ": the actor has no concurrency group '" +
                                             options.concurrency_group + "'")),
               {});
      return {internal::RefData{return_id, kOwner}};
    }
    executor = group->second.get();
  }
  auto shared_args = std::make_shared<std::vector<internal::ArgData>>(std::move(args));
  std::vector<std::string> held = HoldArgs(*shared_args);
  executor->Post([this, actor, method_name, return_id, shared_args, held] {
    std::shared_ptr<void> instance;
    bool restarted = false;
    std::string death;
    {
      std::unique_lock<std::mutex> lock(actor->mu);
      actor->cv.wait(lock, [&] { return actor->state != Actor::State::kStarting; });
      instance = actor->instance;
      restarted = actor->restarted;
      death = actor->death;
    }
    CallScope scope(actor->id, restarted);
    if (!instance) {
      Complete(return_id, nullptr,
               std::make_exception_ptr(ActorDiedError("actor " + ActorID::FromBinary(actor->id).Hex() + " is dead: " + death)),
               {});
    } else {
      RunAndComplete(
          return_id, method_name,
          [&](const Buffers& buffers) {
            const internal::ActorMethod* method = internal::FunctionRegistry::Instance().FindMethod(method_name);
            if (!method) throw Error("actor method '" + method_name + "' is not registered (ORB_REMOTE)");
            try {
              return (*method)(instance.get(), buffers);
            } catch (const internal::ActorExitSignal&) {
              std::lock_guard<std::mutex> lock(actor->mu);
              actor->state = Actor::State::kDead;
              actor->death = "exited by orb::ExitActor()";
              actor->instance.reset();
              throw ActorDiedError("the actor exited on purpose (INTENDED_USER_EXIT): " + method_name + " called orb::ExitActor()");
            }
          },
          *shared_args);
    }
    ReleaseAll(held);
  });
  return {internal::RefData{return_id, kOwner}};
}

void LocalModeRuntime::KillActor(const std::string& actor_id, bool no_restart, const std::string& /*reason*/) {
  std::shared_ptr<Actor> actor = FindActor(actor_id);
  if (!actor) throw Error("cannot kill actor " + ActorID::FromBinary(actor_id).Hex() + ": not known");
  std::lock_guard<std::mutex> lock(actor->mu);
  if (actor->state == Actor::State::kDead) return;
  actor->instance.reset();  // calls running now keep theirs until they return
  bool restarts_left = actor->max_restarts < 0 || actor->num_restarts < actor->max_restarts;
  if (!no_restart && restarts_left) {
    actor->num_restarts++;
    actor->state = Actor::State::kStarting;
    ConstructActor(actor, true);
    return;
  }
  actor->state = Actor::State::kDead;
  actor->death = "killed by ActorHandle::Kill()";
  actor->cv.notify_all();
}

std::string LocalModeRuntime::GetNamedActor(const std::string& name, const std::string& ray_namespace) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = named_actors_.find({ray_namespace.empty() ? namespace_ : ray_namespace, name});
  if (it == named_actors_.end()) return "";
  auto actor = actors_[it->second];
  std::lock_guard<std::mutex> actor_lock(actor->mu);
  return actor->state == Actor::State::kDead ? "" : actor->id;
}

std::string LocalModeRuntime::CurrentActorId() const {
  return current_actor.empty() ? "" : ActorID::FromBinary(current_actor).Hex();
}

bool LocalModeRuntime::WasCurrentActorRestarted() const { return current_restarted; }

std::string LocalModeRuntime::TaskIdHex() const { return current_task; }

std::string LocalModeRuntime::CreatePlacementGroup(const PlacementGroupCreationOptions& options) {
  CheckPlacementGroupOptions(options);
  std::lock_guard<std::mutex> lock(mu_);
  if (!options.name.empty()) {
    for (const auto& [id, pg] : placement_groups_) {
      if (pg.options.name == options.name && pg.state != REMOVED) {
        throw Error("cannot create placement group: a placement group named '" + options.name + "' already exists");
      }
    }
  }
  internal::PlacementGroupData data;
  data.id = PlacementGroupID::FromRandom().Hex();
  data.options = options;
  data.state = CREATED;  // one process: nothing to reserve
  placement_groups_[data.id] = data;
  return data.id;
}

bool LocalModeRuntime::WaitPlacementGroupReady(const std::string& id_hex, int64_t) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = placement_groups_.find(id_hex);
  if (it == placement_groups_.end()) throw Error("no placement group " + id_hex);
  return it->second.state == CREATED;
}

void LocalModeRuntime::RemovePlacementGroup(const std::string& id_hex) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = placement_groups_.find(id_hex);
  if (it == placement_groups_.end()) throw Error("cannot remove placement group " + id_hex + ": no such group");
  it->second.state = REMOVED;
}

bool LocalModeRuntime::LookUpPlacementGroup(const std::string& id_hex, const std::string& name,
                                            internal::PlacementGroupData* out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, pg] : placement_groups_) {
    bool match = id_hex.empty() ? pg.options.name == name && pg.state != REMOVED : id == id_hex;
    if (match) {
      *out = pg;
      return true;
    }
  }
  return false;
}

std::vector<internal::PlacementGroupData> LocalModeRuntime::ListPlacementGroups() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<internal::PlacementGroupData> all;
  for (const auto& [id, pg] : placement_groups_) all.push_back(pg);
  return all;
}

std::vector<NodeInfo> LocalModeRuntime::Nodes() {
  NodeInfo node;
  node.node_id = node_id_;
  node.address = "local";
  node.alive = true;
  node.resources_total = {{"CPU", num_cpus_}};
  node.resources_available = node.resources_total;
  return {node};
}

void LocalModeRuntime::Disconnect() {
  std::vector<std::shared_ptr<Actor>> actors;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    for (const auto& [id, actor] : actors_) actors.push_back(actor);
  }
  tasks_.Stop();
  for (const auto& actor : actors) actor->executor->Stop();
  // Running calls finish on their own; wait a little for them before the runtime goes.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  auto left = [&] {
    return std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                      deadline - std::chrono::steady_clock::now()));
  };
  idle_ = tasks_.WaitIdle(left());
  for (const auto& actor : actors) idle_ = actor->executor->WaitIdle(left()) && idle_;
  if (!idle_) spdlog::warn("local mode: tasks still running at Shutdown; their runtime is left to them");
}

}  // namespace orb

// Config::local_mode: the C++ API run in this process alone, with no GCS, raylet or
// worker processes, for debugging a program under gdb or a sanitizer.
//
// Tasks run on a pool of threads as many as the CPUs the program asked for (more while
// some of them wait in Get, so nested tasks never starve); each actor runs on threads
// of its own (one: calls in the order made; max_concurrency: that many at once);
// objects live in a map, freed when no ObjectRef, pending task or containing object
// holds them. What tasks see is what they see on a cluster: the same registered
// functions, serialized arguments and results, errors (TaskError with the function and
// exception type, ActorDiedError, GetTimeoutError...), IDs, namespaces, named actors,
// restarts, ExitActor, placement groups (placed at once). Options are checked as on a
// cluster; resources, scheduling strategies, placement and runtime environments are
// not applied (one process has one environment). Thread-safe.
#pragma once

#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/local_executor.h"
#include "core/runtime.h"

namespace orb {

class LocalModeRuntime : public Runtime {
 public:
  // `runtime_env`: the job's, checked; its env_vars are set in this process.
  LocalModeRuntime(const Config& config, const std::string& runtime_env);
  ~LocalModeRuntime() override;

  // Tasks here have one return (num_returns > 1: orb::Error).
  std::vector<internal::RefData> SubmitTask(const std::string& function_name, std::vector<internal::ArgData> args,
                                            const internal::TaskOptionsData& options) override;
  internal::RefData PutWith(size_t size, const std::function<void(char*)>& write) override;
  std::vector<std::shared_ptr<internal::ValueBuffer>> Get(const std::vector<internal::RefData>& refs,
                                                          int64_t timeout_ms) override;
  std::vector<bool> Wait(const std::vector<internal::RefData>& refs, int num_objects, int64_t timeout_ms) override;
  void AddLocalReference(const std::string& id) override;
  void RemoveLocalReference(const std::string& id) override;
  void Borrow(const internal::RefData& ref) override { AddLocalReference(ref.id); }
  void RegisterBorrows() override {}

  std::string CreateActor(const std::string& factory_name, std::vector<internal::ArgData> args,
                          const internal::ActorOptionsData& options) override;
  std::vector<internal::RefData> SubmitActorTask(const std::string& actor_id, const std::string& method_name,
                                                 std::vector<internal::ArgData> args,
                                                 const internal::TaskOptionsData& options) override;
  void KillActor(const std::string& actor_id, bool no_restart, const std::string& reason) override;
  std::string GetNamedActor(const std::string& name, const std::string& ray_namespace) override;
  std::string CurrentActorId() const override;
  bool WasCurrentActorRestarted() const override;

  std::string CreatePlacementGroup(const PlacementGroupCreationOptions& options) override;
  bool WaitPlacementGroupReady(const std::string& id_hex, int64_t timeout_ms) override;
  void RemovePlacementGroup(const std::string& id_hex) override;
  bool LookUpPlacementGroup(const std::string& id_hex, const std::string& name,
                            internal::PlacementGroupData* out) override;
  std::vector<internal::PlacementGroupData> ListPlacementGroups() override;

  std::vector<NodeInfo> Nodes() override;
  // Local mode has no autoscaler: nothing to ask.
  void RequestResources(const std::vector<std::map<std::string, double>>&) override {}
  std::string NamespaceName() const override { return namespace_; }
  std::string NodeIdHex() const override { return node_id_; }
  std::string JobIdHex() const override { return job_id_; }
  std::string WorkerIdHex() const override { return std::string(32, '0'); }  // one process: the driver
  std::string TaskIdHex() const override;
  std::string CurrentPlacementGroupId() const override { return ""; }  // groups place nothing here
  std::map<std::string, double> CurrentTaskResources() const override { return {}; }  // nothing is held
  ClusterEndpoints GetClusterEndpoints() override { return {}; }  // no daemons
  std::string GcsAddress() const override { return ""; }
  void Disconnect() override;
  bool SafeToDestroy() const override { return idle_; }

 private:
  struct Object {
    bool ready = false;
    std::shared_ptr<const std::string> bytes;
    std::exception_ptr error;           // an orb::Error subclass when the task failed
    int refs = 0;                       // ObjectRefs, pending tasks, containing objects
    std::vector<std::string> contained; // refs inside the value, held while it lives
  };
  struct Actor;
  using Buffers = std::vector<std::shared_ptr<internal::ValueBuffer>>;

  // A new pending object with one reference.
  std::string NewObject();
  void Complete(const std::string& id, std::shared_ptr<const std::string> bytes, std::exception_ptr error,
                std::vector<std::string> contained);
  // Waits (letting the pool run other work meanwhile) until `id` is ready or the
  // deadline; false on timeout. REQUIRES: `lock` holds mu_.
  bool WaitReady(std::unique_lock<std::mutex>& lock, const std::string& id,
                 std::chrono::steady_clock::time_point deadline);
  // The argument buffers of a call: values in place, refs waited for. Rethrows a
  // failed dependency's error.
  Buffers ResolveArgs(const std::vector<internal::ArgData>& args);
  // Holds every ref argument (top-level and inside values) until `release` runs.
  std::vector<std::string> HoldArgs(const std::vector<internal::ArgData>& args);
  void ReleaseAll(const std::vector<std::string>& ids);
  // Runs `call` on `args` as `task_id`: its result or its error, as a cluster worker
  // would record them. `what` names the callee in errors.
  void RunAndComplete(const std::string& return_id, const std::string& name,
                      const std::function<std::string(const Buffers&)>& call, const std::vector<internal::ArgData>& args);
  void ConstructActor(const std::shared_ptr<Actor>& actor, bool restarted);
  std::shared_ptr<Actor> FindActor(const std::string& actor_id);

  std::string namespace_;
  std::string node_id_;
  std::string job_id_;
  double num_cpus_;
  LocalExecutor tasks_;
  bool idle_ = true;  // nothing ran on after Disconnect

  mutable std::mutex mu_;
  std::condition_variable ready_cv_;
  std::unordered_map<std::string, Object> objects_;                 // guarded by mu_
  std::unordered_map<std::string, std::shared_ptr<Actor>> actors_;  // guarded by mu_
  std::map<std::pair<std::string, std::string>, std::string> named_actors_;  // (ns, name) -> id; guarded by mu_
  std::map<std::string, internal::PlacementGroupData> placement_groups_;     // by hex ID; guarded by mu_
  bool stopped_ = false;                                                     // guarded by mu_
};

}  // namespace orb

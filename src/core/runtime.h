// What the C++ API runs on: a cluster (CoreWorker, one per process) or, with
// Config::local_mode, this process alone (LocalModeRuntime). The functions of
// <orb/internal/runtime.h> forward here. Thread-safe in both.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "orb/api.h"

namespace orb {

class Runtime {
 public:
  virtual ~Runtime() = default;

  // Tasks and objects. RefData results carry one reference; a task's, one per return
  // (options.num_returns).
  virtual std::vector<internal::RefData> SubmitTask(const std::string& function_name,
                                                    std::vector<internal::ArgData> args,
                                                    const internal::TaskOptionsData& options) = 0;
  virtual internal::RefData PutWith(size_t size, const std::function<void(char*)>& write) = 0;
  virtual std::vector<std::shared_ptr<internal::ValueBuffer>> Get(const std::vector<internal::RefData>& refs,
                                                                  int64_t timeout_ms) = 0;
  virtual std::vector<bool> Wait(const std::vector<internal::RefData>& refs, int num_objects, int64_t timeout_ms) = 0;
  virtual void AddLocalReference(const std::string& id) = 0;
  virtual void RemoveLocalReference(const std::string& id) = 0;
  // A ref read out of a value (see ObjectTable); RegisterBorrows tells owners.
  virtual void Borrow(const internal::RefData& ref) = 0;
  virtual void RegisterBorrows() = 0;

  // Actors. IDs are binary.
  virtual std::string CreateActor(const std::string& factory_name, std::vector<internal::ArgData> args,
                                  const internal::ActorOptionsData& options) = 0;
  virtual std::vector<internal::RefData> SubmitActorTask(const std::string& actor_id, const std::string& method_name,
                                                         std::vector<internal::ArgData> args,
                                                         const internal::TaskOptionsData& options) = 0;
  virtual void KillActor(const std::string& actor_id, bool no_restart, const std::string& reason) = 0;
  // Streaming generators (internal::NextGeneratorItem...). Not in local mode.
  virtual internal::GeneratorNext NextGeneratorItem(const internal::RefData& task_ref, int64_t timeout_ms,
                                                    internal::RefData* item) {
    throw Error("streaming generators need a cluster (they are not supported in local mode)");
  }
  virtual void DropGenerator(const internal::RefData& task_ref) {}
  virtual std::vector<internal::RefData> PeekGeneratorItems(const internal::RefData& task_ref, int64_t n) {
    throw Error("streaming generators need a cluster (they are not supported in local mode)");
  }
  virtual bool ReportGeneratorItem(internal::ReturnData item) {
    throw Error("streaming generators need a cluster (they are not supported in local mode)");
  }
  // internal::WhenReady. Local mode: a thread that waits.
  virtual void WhenReady(const internal::RefData& ref, std::function<void()> callback) {
    std::thread([this, ref, callback = std::move(callback)] {
      try {
        Wait({ref}, 1, -1);
      } catch (...) {
      }
      callback();
    }).detach();
  }
  // internal::TrackActorHandles. Local mode: an object that tracks nothing.
  virtual internal::RefData TrackActorHandles(const std::string& actor_id) {
    return PutWith(1, [](char* nil) { *nil = static_cast<char>(0xc0); });
  }
  // orb::Cancel. Where every task runs at once (local mode) there is nothing to cancel.
  virtual void CancelTask(const internal::RefData& ref, bool force, bool recursive) {}
  virtual std::string GetNamedActor(const std::string& name, const std::string& ray_namespace) = 0;
  virtual std::string CurrentActorId() const = 0;  // hex; empty outside an actor
  virtual bool WasCurrentActorRestarted() const = 0;

  // Placement groups. IDs are hex.
  virtual std::string CreatePlacementGroup(const PlacementGroupCreationOptions& options) = 0;
  virtual bool WaitPlacementGroupReady(const std::string& id_hex, int64_t timeout_ms) = 0;
  virtual void RemovePlacementGroup(const std::string& id_hex) = 0;
  virtual bool LookUpPlacementGroup(const std::string& id_hex, const std::string& name,
                                    internal::PlacementGroupData* out) = 0;
  virtual std::vector<internal::PlacementGroupData> ListPlacementGroups() = 0;

  // Where this code runs.
  virtual std::vector<NodeInfo> Nodes() = 0;
  // Replaces the autoscaler's standing request (validated by the caller).
  virtual void RequestResources(const std::vector<std::map<std::string, double>>& bundles) = 0;
  virtual std::string NamespaceName() const = 0;
  virtual std::string NodeIdHex() const = 0;
  virtual std::string JobIdHex() const = 0;
  virtual std::string WorkerIdHex() const = 0;
  virtual std::string TaskIdHex() const = 0;  // empty outside a task
  // The placement group (hex) the current task or actor runs in; empty: none.
  virtual std::string CurrentPlacementGroupId() const = 0;
  // internal::BeginBlockedWait / EndBlockedWait.
  virtual void LendCpu(bool lend) { (void)lend; }
  // The resources the current task or actor holds (plain names); empty outside one.
  virtual std::map<std::string, double> CurrentTaskResources() const = 0;
  using ClusterEndpoints = internal::ClusterEndpoints;
  virtual ClusterEndpoints GetClusterEndpoints() = 0;
  virtual std::string GcsAddress() const = 0;  // empty when there is no cluster

  // Leaves the cluster (or stops local execution).
  virtual void Disconnect() = 0;
  // False when, after Disconnect, user code it cannot stop still runs on its threads
  // (local mode): the runtime is then left allocated rather than freed under it.
  virtual bool SafeToDestroy() const { return true; }
};

}  // namespace orb

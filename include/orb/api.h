// orb: the C++ API. One include is all a program needs.
//
//   int Plus(int a, int b) { return a + b; }
//   ORB_REMOTE(Plus);
//
//   int main(int argc, char** argv) {
//     orb::Init(argc, argv);                   // embedded cluster, or --orb-address=HOST:PORT
//     auto r = orb::Task(Plus).Remote(1, 2);
//     std::cout << *orb::Get(r) << "\n";       // 3
//     orb::Shutdown();
//   }
//
// Init, Shutdown and IsInitialized must not race with each other; everything else is
// thread-safe once Init has returned.
#pragma once

// Standard headers Ray's <ray/api.h> brings in, which Ray programs rely on.
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "orb/actor.h"
#include "orb/buffer.h"
#include "orb/collective.h"
#include "orb/config.h"
#include "orb/cross_language.h"
#include "orb/errors.h"
#include "orb/internal/function_registry.h"
#include "orb/internal/runtime.h"
#include "orb/logging.h"
#include "orb/object_ref.h"
#include "orb/placement_group.h"
#include "orb/scheduling.h"
#include "orb/serialization.h"
#include "orb/task_caller.h"

namespace orb {

// Connects to a cluster, or starts an embedded one (see Config::address). In a worker
// process started by a raylet, Init serves tasks and never returns. Called again while
// initialized, it does nothing (as Ray's).
inline void Init(const Config& config = Config()) { internal::Init(config, 0, nullptr); }
// Also reads --orb-address=HOST:PORT, --orb-token=..., --orb-namespace=NS,
// --orb-num-cpus=N, --orb-code-search-path=DIR[:DIR], --orb-runtime-env=JSON and
// --orb-default-actor-lifetime=detached|non_detached (also spelt --orb_address=...,
// as Ray's --ray_address). Other arguments are the program's and are left alone; an
// unknown --orb-* flag is an orb::Error.
inline void Init(int argc, char** argv) { internal::Init(Config(), argc, argv); }
inline void Init(const Config& config, int argc, char** argv) { internal::Init(config, argc, argv); }
inline bool IsInitialized() { return internal::IsInitialized(); }
// True when Init ran with Config::local_mode.
inline bool IsLocalMode() { return internal::IsLocalMode(); }
// Leaves the cluster; stops the embedded cluster if Init started one.
inline void Shutdown() { internal::Shutdown(); }

template <class T>
std::shared_ptr<T> Get(const ObjectRef<T>& ref, int64_t timeout_ms = -1) {
  return ref.Get(timeout_ms);
}

// Waits for a task that returns void; throws what it threw.
inline void Get(const ObjectRef<void>& ref, int64_t timeout_ms = -1) { ref.Get(timeout_ms); }

namespace internal {
template <class T>
std::vector<RefData> DataOf(const std::vector<ObjectRef<T>>& refs) {
  std::vector<RefData> data;
  data.reserve(refs.size());
  for (const auto& r : refs) data.push_back(r.data());
  return data;
}
}  // namespace internal

template <class T>
std::vector<std::shared_ptr<T>> Get(const std::vector<ObjectRef<T>>& refs, int64_t timeout_ms = -1) {
  auto buffers = internal::Get(internal::DataOf(refs), timeout_ms);
  internal::BorrowScope scope;  // ObjectRefs inside the values are registered before they go
  std::vector<std::shared_ptr<T>> values;
  values.reserve(buffers.size());
  for (const auto& b : buffers) values.push_back(internal::ValueOf<T>(b));
  return values;
}

// Waits for every task of `refs` (which return void); throws the first failure.
inline void Get(const std::vector<ObjectRef<void>>& refs, int64_t timeout_ms = -1) {
  internal::Get(internal::DataOf(refs), timeout_ms);
}

// Stores a value in the cluster and returns a reference this process owns.
template <class T>
ObjectRef<T> Put(const T& value) {
  size_t size = internal::SerializedSize(value);
  internal::ClearSerializedRefs();  // the counting pass's; PutWith takes the real pass's
  auto write = [&value](char* destination) {
    internal::RawWriter writer{destination};
    msgpack::pack(writer, value);
  };
  return ObjectRef<T>(internal::PutWith(size, write), internal::AdoptRef{});
}

// Waits until `num_objects` of `refs` are ready or `timeout_ms` passes (< 0: no limit).
template <class T>
WaitResult<T> Wait(const std::vector<ObjectRef<T>>& refs, int num_objects, int64_t timeout_ms = -1) {
  std::vector<bool> ready = internal::Wait(internal::DataOf(refs), num_objects, timeout_ms);
  WaitResult<T> result;
  for (size_t i = 0; i < refs.size(); ++i) (ready[i] ? result.ready : result.unready).push_back(refs[i]);
  return result;
}

// Cancels the task that returns `ref` (Ray's ray::Cancel). A queued task is taken out
// of its queue; a running one is interrupted where its language allows (a Python task
// gets KeyboardInterrupt; C++ code is not interrupted, and finishes unless `force`);
// `force` kills the worker running it. `recursive`: the tasks it submitted are cancelled
// too. Get then throws TaskCancelledError; a task that had already finished keeps its
// result. A process that borrowed `ref` cancels through the task's owner; an actor call
// can be cancelled only while queued, and never with `force` (std::invalid_argument).
template <class T>
void Cancel(const ObjectRef<T>& ref, bool force = false, bool recursive = true) {
  internal::CancelTask(ref.data(), force, recursive);
}

struct NodeInfo {
  std::string node_id;  // hex
  std::string address;  // raylet "ip:port"
  bool alive = false;
  std::map<std::string, double> resources_total;
  std::map<std::string, double> resources_available;
  std::map<std::string, std::string> labels;
  int64_t object_store_memory = 0;  // the node's object store capacity, bytes
};

// The namespace of this job (Config::ray_namespace, or one of its own when none was
// given), in the driver, its tasks and its actors alike.
inline std::string GetNamespace() { return internal::CurrentNamespace(); }

// Every node the GCS knows, alive or dead.
inline std::vector<NodeInfo> Nodes() { return internal::ClusterNodes(); }

// Asks the autoscaler to make the cluster able to hold all of `bundles` at once (Ray's
// request_resources), beyond what queued work asks for, and to keep that capacity: the
// nodes they fit on are not scaled in while the request stands. Each call replaces the
// previous request; an empty list withdraws it. Does nothing in local mode. Throws
// orb::Error for a negative or non-finite amount.
//   orb::RequestResources({{{"CPU", 4}}, {{"GPU", 1}}});
inline void RequestResources(const std::vector<std::map<std::string, double>>& bundles) {
  internal::RequestResources(bundles);
}
// As Ray's request_resources(num_cpus=N): N bundles of one CPU.
inline void RequestResources(int num_cpus) {
  internal::RequestResources(std::vector<std::map<std::string, double>>(num_cpus, {{"CPU", 1.0}}));
}

class RuntimeContext {
 public:
  std::string GetNodeId() const { return internal::CurrentNodeId(); }
  std::string GetJobId() const { return internal::CurrentJobId(); }
  // Empty in the driver.
  std::string GetTaskId() const { return internal::CurrentTaskId(); }
  // Hex; empty outside an actor.
  std::string GetActorId() const { return internal::CurrentActorId(); }
  // True in an actor whose constructor ran again after its process died (also inside
  // that constructor).
  bool WasCurrentActorRestarted() const { return internal::WasCurrentActorRestarted(); }
  // The GCS address ("HOST:PORT") of the cluster this process is in ("" in local mode):
  // what another program passes as --orb-address to join it.
  std::string GetGcsAddress() const { return internal::CurrentGcsAddress(); }
};

inline RuntimeContext& GetRuntimeContext() {
  static RuntimeContext context;
  return context;
}

}  // namespace orb

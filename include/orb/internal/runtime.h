// The non-template boundary between the header-only C++ API and liborb. Users do not
// call these directly; the templates in <orb/api.h> do. No protobuf or gRPC types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "orb/config.h"

namespace orb {
struct NodeInfo;
namespace internal {

enum class Language { kCpp = 0, kPython = 1 };

// A value's serialized bytes: held inline, or mapped from the node's object store
// (zero-copy; the store keeps the object pinned while this buffer lives).
class ValueBuffer {
 public:
  virtual ~ValueBuffer() = default;
  virtual const char* data() const = 0;
  virtual size_t size() const = 0;
};

// An object reference on the wire: binary object ID and the owner's address.
struct RefData {
  std::string id;     // 20 bytes
  std::string owner;  // "ip:port/worker_id_hex"
};

struct ArgData {
  bool is_ref = false;
  std::string value;  // serialized value when !is_ref
  RefData ref;
  // ObjectRefs serialized inside `value`, each with one hold (see TakeSerializedRefs).
  std::vector<RefData> contained_refs;
};

// TaskOptionsData::strategy: which SchedulingStrategy (orb/scheduling.h) was chosen,
// as its index in the variant (and rpc::SchedulingOptions::Strategy's number).
inline constexpr int kStrategyDefault = 0;  // hybrid: pack locally, then spread
inline constexpr int kStrategySpread = 1;
inline constexpr int kStrategyNodeAffinity = 2;

struct TaskOptionsData {
  std::map<std::string, double> resources;  // default {"CPU": 1}
  bool resources_set = false;
  int max_retries = 3;
  std::string name;
  // Scheduling: the index of the SchedulingStrategy alternative (kStrategy*).
  int strategy = 0;
  std::string affinity_node_id;  // hex
  bool affinity_soft = false;
  std::string label_selector;       // hard
  std::string soft_label_selector;  // preferred
  std::string placement_group_id;   // hex; empty: not in a group
  int bundle_index = -1;            // -1: any bundle of the group
  // In a group: what this task or actor starts goes into the group too, unless it names
  // a placement of its own. A task started with no placement by one that captures is
  // placed in the same group (any bundle), and captures in turn.
  bool capture_child_tasks = false;
  // Not captured into the group of the task that starts it (Ray's
  // PlacementGroupSchedulingStrategy(placement_group=None)).
  bool leave_captured_group = false;
  std::string runtime_env;          // RuntimeEnv::Serialize(); empty: the job's (or parent's)
  // The language the function is written in: a worker of that language runs it.
  Language language = Language::kCpp;
  // Retries of a task killed for memory ask for `memory` times this, up to max_memory
  // bytes (0: no cap); 0: retried with the same request.
  double memory_growth = 0;
  double max_memory = 0;
  // How many objects the task returns, each its own ref (SubmitTaskReturns).
  int num_returns = 1;
  // A streaming generator: its items are read with NextGeneratorItem as it yields them;
  // at most `generator_backpressure` of them unread before it waits (0: no bound).
  bool streaming = false;
  int generator_backpressure = 0;
  // An actor call: the actor's concurrency group it runs in (empty: the default group).
  std::string concurrency_group;
  // Errors the task's code raises are retried too, up to max_retries; only those of the
  // allowlist's classes when it is given (Python: a pickled tuple of exception classes).
  bool retry_exceptions = false;
  std::string retry_exception_allowlist;
  // A worker ends after this many calls of the function (0: no limit; Ray's max_calls).
  int max_calls = 0;
};

// How an actor is created: where it runs (as for a task; no resources by default, so
// that many small actors fit), and its lifecycle options.
struct ActorOptionsData {
  TaskOptionsData placement;
  std::string name;            // empty: not findable by name
  std::string ray_namespace;   // empty: the job's namespace
  int max_restarts = 0;        // -1: without limit
  int max_task_retries = 0;    // -1: without limit
  int max_concurrency = 1;  // of the default concurrency group
  // Named concurrency groups: each runs up to its number of calls at once, apart from
  // the others and from the default group.
  std::map<std::string, int> concurrency_groups;
  bool detached = false;
  bool lifetime_set = false;  // false: the job's Config::default_actor_lifetime
};

// Thrown by orb::ExitActor() inside an actor method; caught by the worker, which ends
// the actor. Not a std::exception, so that user code does not catch it by accident.
struct ActorExitSignal {};

void Init(const Config& config, int argc, char** argv);
// Before Init, in a Python driver: how raylets start the job's Python workers (the
// interpreter and its module search path).
void SetPythonWorkers(const std::string& executable, const std::vector<std::string>& path);
// Job-wide key-value storage in the GCS (namespace `ns`); used to export code.
void KvPut(const std::string& ns, const std::string& key, const std::string& value);
bool KvGet(const std::string& ns, const std::string& key, std::string* value);
void Shutdown();
bool IsInitialized();
bool IsLocalMode();

// SubmitTask and Put return a RefData that already holds one local reference.
// REQUIRES: options.num_returns == 1 (else std::invalid_argument).
RefData SubmitTask(const std::string& function_name, std::vector<ArgData> args, const TaskOptionsData& options);
// A task with options.num_returns (>= 1) returns: a ref to each, in order, each holding
// one local reference.
std::vector<RefData> SubmitTaskReturns(const std::string& function_name, std::vector<ArgData> args,
                                       const TaskOptionsData& options);
// Stores a value of `size` bytes that `write` serializes straight into its final place
// (the shared-memory store for large values): one copy instead of three.
RefData PutWith(size_t size, const std::function<void(char* destination)>& write);
// Values in order; throws the orb::Error subclass a failed object carries, or
// GetTimeoutError. timeout_ms < 0 waits forever.
std::vector<std::shared_ptr<ValueBuffer>> Get(const std::vector<RefData>& refs, int64_t timeout_ms);
// Ready flags, once `num_objects` are ready or the timeout passes.
std::vector<bool> Wait(const std::vector<RefData>& refs, int num_objects, int64_t timeout_ms);
// Calls `callback` once, on a thread of the runtime's, when the object is ready (or
// known lost: a Get then says why); it must not block. For `await ref` in Python.
void WhenReady(const RefData& ref, std::function<void()> callback);

// Reference counting: an object is freed when no ObjectRef to it remains in its owner,
// no pending task needs it, no other process borrows it and no live object holds it.
void AddLocalReference(const std::string& id);
void RemoveLocalReference(const std::string& id);

// ObjectRefs inside values (the borrower protocol). Serializing an ObjectRef records it
// on this thread with a hold that keeps the object alive; whoever serialized the value
// takes the records (and their holds) with TakeSerializedRefs, or drops them with
// ClearSerializedRefs. Deserializing an ObjectRef makes this process a borrower: it
// holds one reference, registered with the owner before the scope the value was read
// in ends (or at once outside any BorrowScope).
void OnRefSerialized(const RefData& ref);
std::vector<RefData> TakeSerializedRefs();
void ClearSerializedRefs();
void OnRefDeserialized(const RefData& ref);

// A value a task returns: serialized, with the ObjectRefs serialized in it (each held
// once, as TakeSerializedRefs hands them).
struct ReturnData {
  std::string value;
  std::vector<RefData> refs;
};
// Inside a running task: how many values its caller asked for (num_returns; 1 outside).
int CurrentTaskNumReturns();
// Whether the task running on this thread retries the errors its code raises; its
// allowlist (empty: any error) in `*allowlist`.
bool CurrentTaskRetriesErrors(std::string* allowlist);
// The task running on this thread raised an error it may be retried for (checked
// against its allowlist by the caller): its owner runs it again while retries are left.
void MarkRetryableError();
// A task with num_returns = N > 1 hands returns 2..N here (N - 1 values, in order)
// before its function (Invoker or ActorMethod) returns the first; one that does not
// (it failed) gives every return its first value.
void SetMoreReturns(std::vector<ReturnData> values);

// Streaming generators. Inside a running task: whether it streams; then each item it
// yields goes to its owner with ReportGeneratorItem, which returns once the owner has it
// (under backpressure, once the reader caught up) — true when the owner knows no such
// stream (it is gone) and the generator may stop.
bool CurrentTaskStreams();
bool ReportGeneratorItem(ReturnData item);
// The owner's reader of a streaming task (`task_ref`: the task's own ref, from
// SubmitTask): the next item, its ref in `*item` holding one local reference; kEnd once
// the task ended with no more items (read `task_ref` for how it ended); kTimedOut after
// timeout_ms (< 0: never). `item` null: only whether the next item (or the end) is
// there, taking nothing (orb.wait on a generator: an item counts as read only once
// taken, which is what backpressure waits for).
enum class GeneratorNext { kItem, kEnd, kTimedOut };
GeneratorNext NextGeneratorItem(const RefData& task_ref, int64_t timeout_ms, RefData* item);
// The reader is gone: unread items are let go, and the generator runs on to its end
// (released from backpressure), each later item let go at once, as in Ray.
void DropGenerator(const RefData& task_ref);
// The reader's next `n` items without taking them (Python's _get_next_ref_n), each ref
// holding one local reference: an item not made yet is its ref once made — or, if the
// task ends first, its error (ObjectRefStreamEndOfStreamError when it ended well).
std::vector<RefData> PeekGeneratorItems(const RefData& task_ref, int64_t n);
// While one lives on this thread, borrows are registered in one batch at its end.
class BorrowScope {
 public:
  BorrowScope();
  ~BorrowScope();
  BorrowScope(const BorrowScope&) = delete;
  BorrowScope& operator=(const BorrowScope&) = delete;
};

// Registers the actor with the GCS (which schedules it) and returns its binary ID.
std::string CreateActor(const std::string& factory_name, std::vector<ArgData> args, const ActorOptionsData& options);
// `options`: name (and resources, checked but not scheduled: the actor's are used).
RefData SubmitActorTask(const std::string& actor_id, const std::string& method_name, std::vector<ArgData> args,
                        const TaskOptionsData& options);
// As SubmitTaskReturns, for an actor call.
std::vector<RefData> SubmitActorTaskReturns(const std::string& actor_id, const std::string& method_name,
                                            std::vector<ArgData> args, const TaskOptionsData& options);
// `reason`: why, in the actor's death reason (empty: "killed by ActorHandle::Kill()").
void KillActor(const std::string& actor_id, bool no_restart, const std::string& reason = "");
// Ties the life of an actor this process created to a new object: once no ref to it is
// left in any process (handles hold it and carry it when they are serialized; each call
// holds it until done), the actor is killed. Returns that ref, holding one local
// reference. In local mode actors are not collected.
RefData TrackActorHandles(const std::string& actor_id);
// Cancels the task that returns `ref` (through its owner when not this process): see orb::Cancel.
void CancelTask(const RefData& ref, bool force, bool recursive);
// The binary ID of the live actor with that name, or empty.
std::string GetNamedActor(const std::string& name, const std::string& ray_namespace);
std::string CurrentActorId();  // hex; empty outside an actor
bool WasCurrentActorRestarted();

std::string CurrentNamespace();
std::string CurrentGcsAddress();
std::string CurrentNodeId();
std::string CurrentJobId();
std::string CurrentWorkerId();  // hex: this process's worker (or driver) ID
std::string CurrentTaskId();
// The placement group (hex) the current task or actor runs in; empty: none.
std::string CurrentPlacementGroupId();
// Between the two, a worker's thread that waits lends the worker's CPU to other tasks
// (as Get and Wait do while they wait), for a wait made of many short ones (Python's
// interruptible get). Nested pairs are fine; a driver lends nothing.
void BeginBlockedWait();
void EndBlockedWait();
// The resources the current task or actor holds, by their plain names (in a placement
// group too); empty outside one.
std::map<std::string, double> CurrentTaskResources();
// The cluster's web endpoints as its GCS reports them ("host:port"; empty: not served).
struct ClusterEndpoints {
  std::string dashboard;
  std::string metrics;  // the GCS's Prometheus /metrics
};
ClusterEndpoints GetClusterEndpoints();
std::vector<NodeInfo> ClusterNodes();
void RequestResources(const std::vector<std::map<std::string, double>>& bundles);

}  // namespace internal
}  // namespace orb

// The exceptions the orb C++ API throws. All derive from orb::Error, itself a
// std::runtime_error, so `catch (const orb::Error&)` catches every orb failure.
#pragma once

#include <stdexcept>
#include <string>

namespace orb {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The task threw; what() holds the function name and the remote message.
class TaskError : public Error {
 public:
  using Error::Error;
};
// The worker running the task died and no retries were left.
class WorkerCrashedError : public Error {
 public:
  using Error::Error;
};
// The worker running the task was killed for memory, and no retries were left: by its
// node's memory monitor (the node was above its threshold; what() names the node, its
// use, the threshold and the worker's use) or by its cgroup (it used more than the
// `memory` it asked for). A WorkerCrashedError, so that handlers of crashes catch it too.
class OutOfMemoryError : public WorkerCrashedError {
 public:
  using WorkerCrashedError::WorkerCrashedError;
};
// The actor is dead (killed, or crashed past its restarts).
class ActorDiedError : public Error {
 public:
  using Error::Error;
};
// Every copy of the object is gone and it cannot be rebuilt: made by Put or an actor
// call, by a task with max_retries=0 or out of retries, or outside the lineage budget.
// what() names the object, what was lost and why it cannot be rebuilt.
class ObjectLostError : public Error {
 public:
  using Error::Error;
};
// The process that owned the object (the driver or worker that made it) died; what()
// names the owner. An ObjectLostError, as in Ray.
class OwnerDiedError : public ObjectLostError {
 public:
  using ObjectLostError::ObjectLostError;
};
// Get passed its timeout.
class GetTimeoutError : public Error {
 public:
  using Error::Error;
};
// The object store cannot hold the object.
class ObjectStoreFullError : public Error {
 public:
  using Error::Error;
};
// The object store had to spill objects to disk and the disk is full.
class OutOfDiskError : public Error {
 public:
  using Error::Error;
};
// A named actor or placement group was created with a name its namespace already
// holds (Ray's Python raises ValueError; orb's Python does too).
class NameTakenError : public Error {
 public:
  using Error::Error;
};
// The task was cancelled (orb::Cancel) before it finished: taken out of its queue,
// interrupted while running, or its worker killed (force).
class TaskCancelledError : public Error {
 public:
  using Error::Error;
};
// A streaming generator's item asked for ahead (Python's _get_next_ref_n) that never
// came: the generator ended before it (Ray's ObjectRefStreamEndOfStreamError).
class ObjectRefStreamEndOfStreamError : public Error {
 public:
  using Error::Error;
};
// No node can ever satisfy the resource request.
class InfeasibleError : public Error {
 public:
  using Error::Error;
};
// A collective failed: a member died, sizes mismatched, timeout, unknown group.
class CollectiveError : public Error {
 public:
  using Error::Error;
};
// A RuntimeEnv field is missing or malformed, or a task's runtime environment cannot
// be set up (an unknown field, a working_dir that does not exist...).
class RuntimeEnvError : public Error {
 public:
  using Error::Error;
};

// Ray's C++ exception names, renamed, so that a Ray program's catch clauses port as
// they are (Ray keeps them in ray::internal).
namespace internal {
using OrbException = Error;
using OrbTaskException = TaskError;
using OrbActorException = ActorDiedError;
using OrbWorkerException = WorkerCrashedError;
using UnreconstructableException = ObjectLostError;
using OwnerDiedException = OwnerDiedError;
using OrbTimeoutException = GetTimeoutError;
using OrbRuntimeEnvException = RuntimeEnvError;
using OrbFunctionNotFound = TaskError;
using OrbTaskCancelledException = TaskCancelledError;
}  // namespace internal

}  // namespace orb

// Turns an error carried by an object into the orb::Error subclass the API promises.
#pragma once

#include "core/common_types.h"
#include "orb/errors.h"

namespace orb {

[[noreturn]] inline void ThrowObjectError(const rpc::ErrorInfo& error) {
  const std::string& m = error.message();
  switch (error.type()) {
    case rpc::WORKER_CRASHED:
      throw WorkerCrashedError(m);
    case rpc::OUT_OF_MEMORY:
      throw OutOfMemoryError(m);
    case rpc::ACTOR_DIED:
      throw ActorDiedError(m);
    case rpc::OBJECT_LOST:
      throw ObjectLostError(m);
    case rpc::OWNER_DIED:
      throw OwnerDiedError(m);
    case rpc::OUT_OF_DISK:
      throw OutOfDiskError(m);
    case rpc::OBJECT_STORE_FULL:
      throw ObjectStoreFullError(m);
    case rpc::INFEASIBLE:
      throw InfeasibleError(m);
    case rpc::RUNTIME_ENV_ERROR:
      throw RuntimeEnvError(m);
    case rpc::TASK_CANCELLED:
      throw TaskCancelledError(m);
    case rpc::END_OF_STREAM:
      throw ObjectRefStreamEndOfStreamError(m);
    case rpc::TASK_ERROR:
    case rpc::FUNCTION_NOT_FOUND:
    case rpc::BAD_ARGUMENT:
    default:
      throw TaskError(m);
  }
}

}  // namespace orb

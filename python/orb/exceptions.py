"""orb's errors, as Ray's `ray.exceptions` (renamed): each is the C++ error of the same
name, raised where the C++ API would throw it."""
from orb._core import (  # noqa: F401 (re-exported)
    ActorDiedError,
    CollectiveError,
    GetTimeoutError,
    InfeasibleError,
    ObjectLostError,
    ObjectStoreFullError,
    OrbError,
    RuntimeEnvError,
    TaskError,
    WorkerCrashedError,
)

# Ray's names for the same errors.
RayError = OrbError
RayTaskError = TaskError
OrbTaskError = TaskError
RayActorError = ActorDiedError

__all__ = ["OrbError", "TaskError", "WorkerCrashedError", "ActorDiedError", "ObjectLostError", "GetTimeoutError",
           "ObjectStoreFullError", "InfeasibleError", "CollectiveError", "RuntimeEnvError", "RayError",
           "RayTaskError", "OrbTaskError", "RayActorError"]

"""orb's errors, as Ray's `ray.exceptions` (renamed): each is the C++ error of the same
name, raised where the C++ API would throw it.

A remote function or actor method that raises makes its result a TaskError: `orb.get`
raises it with the remote traceback in its message, and it is also an instance of the
original exception's class where that can be (`except ValueError` catches a task's
ValueError), as Ray's RayTaskError is."""
from orb._core import (  # noqa: F401 (re-exported)
    ActorDiedError,
    CollectiveError,
    GetTimeoutError,
    InfeasibleError,
    NameTakenError,
    ObjectLostError,
    ObjectStoreFullError,
    OrbError,
    OutOfDiskError,
    OutOfMemoryError,
    OwnerDiedError,
    RuntimeEnvError,
    ObjectRefStreamEndOfStreamError,
    TaskCancelledError,
    TaskError,
    WorkerCrashedError,
)

# Ray's names for the same errors.
RayError = OrbError
RayTaskError = TaskError
OrbTaskError = TaskError
RayActorError = ActorDiedError
RuntimeEnvSetupError = RuntimeEnvError


def _as_instanceof_cause(self):
    """Ray's RayTaskError.as_instanceof_cause(): the error as an instance of its cause's
    class, which a TaskError already is where the class allows."""
    return self


TaskError.as_instanceof_cause = _as_instanceof_cause


# ObjectRefStreamEndOfStreamError: an item of an ObjectRefGenerator asked for ahead
# (_get_next_ref_n) that never came, the stream having ended first (iteration raises
# StopIteration instead).

__all__ = ["OrbError", "TaskError", "WorkerCrashedError", "ActorDiedError", "ObjectLostError", "OwnerDiedError",
           "GetTimeoutError", "ObjectStoreFullError", "OutOfDiskError", "OutOfMemoryError", "InfeasibleError", "NameTakenError", "CollectiveError", "RuntimeEnvError", "TaskCancelledError", "RayError",
           "RayTaskError", "OrbTaskError", "RayActorError", "RuntimeEnvSetupError", "ObjectRefStreamEndOfStreamError"]

_dual_classes = {}


def _init_with_message(self, message):
    Exception.__init__(self, message)


def _str_of_message(self):
    return self.args[0] if self.args else ""


def task_error(function_name, traceback_text, cause, cause_type_name):
    """The TaskError for a task that raised: the remote traceback in its message, `cause`
    the original exception (None when it did not pickle)."""
    message = "%s failed on a worker:\n%s" % (function_name, traceback_text.rstrip())
    cls = TaskError
    if isinstance(cause, TaskError):  # a nested task's error, raised again: its cause's class
        cause = getattr(cause, "cause", None)
    if cause is not None:
        cause_cls = type(cause)
        cls = _dual_classes.get(cause_cls)
        if cls is None:
            try:
                cls = type("TaskError(%s)" % cause_cls.__name__, (TaskError, cause_cls),
                           {"__init__": _init_with_message, "__str__": _str_of_message,
                            "__module__": "orb.exceptions"})
            except TypeError:  # an exception class that cannot be a second base
                cls = TaskError
            _dual_classes[cause_cls] = cls
    error = cls(message)
    error.function_name = function_name
    error.traceback_str = traceback_text
    error.cause = cause
    error.cause_type_name = cause_type_name
    return error

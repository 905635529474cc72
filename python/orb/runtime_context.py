"""Ray's ray.runtime_context module: where the running code is (see RuntimeContext)."""
from orb import RuntimeContext, get_runtime_context  # noqa: F401 (re-exported)

__all__ = ["RuntimeContext", "get_runtime_context"]

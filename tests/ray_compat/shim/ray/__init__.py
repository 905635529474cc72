"""A renaming shim: `import ray` gives orb (orb's Python package is Ray's API renamed).

Only for running Ray's own tests against orb (tests/ray_compat/run.sh). It adds no
API of its own: every public name is orb's. Submodules map to orb's
(ray.util -> orb.util, ray.exceptions -> orb.exceptions, ray.actor -> orb.actor, ...).
Ray-internal modules (ray._private, ray._raylet, ray.util.state, ...) import as stubs
whose members raise NotImplementedError when used, so that a test file whose module
level imports them still collects; the tests that use them are classified out of
scope by classify.py. The small test helpers (wait_for_condition, SignalActor, ...)
come from ray._compat_test_utils, our own minimal versions.
"""
import importlib
import importlib.abc
import importlib.machinery
import pkgutil
import sys
import types

import orb
from orb import *  # noqa: F401,F403

# Every public name of orb, not only its __all__.
for _name in dir(orb):
    if not _name.startswith("_"):
        globals()[_name] = getattr(orb, _name)

_ORB_SUBMODULES = ["exceptions", "actor", "job_config", "util", "util.scheduling_strategies", "util.placement_group",
                   "util.queue", "util.actor_pool", "util.multiprocessing", "collective", "remote_function"]
for _sub in _ORB_SUBMODULES:
    try:
        _mod = importlib.import_module("orb." + _sub)
    except ImportError:
        continue
    sys.modules["ray." + _sub] = _mod
    if "." not in _sub:
        globals()[_sub] = _mod
try:  # orb.util.multiprocessing.* and any other orb.util submodule
    for _info in pkgutil.walk_packages(orb.util.__path__, "orb.util."):
        try:
            sys.modules.setdefault("ray." + _info.name[4:], importlib.import_module(_info.name))
        except Exception:
            pass
except Exception:
    pass
sys.modules.setdefault("ray.util.collective", orb.collective)
# Ray vendors cloudpickle as ray.cloudpickle; orb serializes with the same library.
import cloudpickle  # noqa: E402
sys.modules.setdefault("ray.cloudpickle", cloudpickle)
globals()["cloudpickle"] = cloudpickle

# Modules served by our helpers (their other names are stubs).
_HELPER_MODULES = {"ray._private.test_utils", "ray._common.test_utils", "ray.test_utils",
                   "ray.tests.utils", "ray._private.client_mode_hook"}


class _Missing:
    """A Ray-internal name orb does not have: attribute chaining and calls give more of
    it, and it is false (so that a module-level `skipif(ray_constants.x())` collects; the
    tests that use it are out of scope); any other use raises."""

    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _Missing(self._name + "." + attr)

    def __getitem__(self, item):
        return self

    def _fail(self, *args, **kwargs):
        raise NotImplementedError("ray shim: %s is not provided by orb" % self._name)

    def __call__(self, *args, **kwargs):
        return _Missing(self._name + "()")

    def __bool__(self):
        return False

    __iter__ = _fail

    def __repr__(self):
        return "<missing %s>" % self._name


class _StubModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        full = self.__name__ + "." + attr
        if full in sys.modules:
            return sys.modules[full]
        return _Missing(full)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("ray.") or fullname in sys.modules:
            return None
        if path and importlib.machinery.PathFinder.find_spec(fullname, path) is not None:
            return None  # a real module of this shim (ray._compat_test_utils)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        if spec.name in _HELPER_MODULES:
            from ray import _compat_test_utils as helpers
            for name in helpers.__all__:
                setattr(module, name, getattr(helpers, name))
        return module

    def exec_module(self, module):
        pass


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.insert(0, _Finder())


def __getattr__(name):
    # ray._private, ray._raylet, ray.experimental, ...: Ray-internal, stubbed. A public
    # name orb lacks (ray.get_gpu_ids, ...) stays an AttributeError.
    if name.startswith("_") and not name.startswith("__") or name in (
            "experimental", "cluster_utils", "runtime_env", "data", "serve", "train", "tune", "dashboard",
            "types", "worker", "ray_constants", "state", "serialization", "tests"):
        return importlib.import_module("ray." + name)
    raise AttributeError("module 'ray' (the orb shim) has no attribute %r" % name)

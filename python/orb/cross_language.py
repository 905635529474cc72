"""Calling C++ from Python (Ray's ray.cross_language, renamed): functions and actors
registered in C++ with ORB_REMOTE, found on the job's code_search_path.

    orb.init(code_search_path=["build/lib"])
    orb.get(orb.cpp_function("Plus").remote(1, 2))                 # 3
    counter = orb.cpp_actor_class("Counter::Create").remote(10)
    orb.get(counter.Add.remote(5))                                  # "Counter::Add": 15

Values cross as msgpack, as C++ values travel: None, bool, int, float, str, bytes,
lists/tuples and dicts of those. Anything else is a TypeError naming the type, before
the call is sent. A C++ failure (an unknown name, a wrong argument count or type, an
exception) is raised by orb.get as TaskError with the C++ message.
"""
import msgpack

from orb import _core, _options
from orb._core import ObjectRef

LANGUAGE_CPP = 0


def pack_value(value, what):
    """msgpack bytes of a value crossing to or from C++; TypeError naming what cannot."""
    try:
        return msgpack.packb(value, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError("%s, of type %s, cannot cross between Python and C++ (numbers, bool, None, str, bytes, "
                        "lists and dicts of those can): %s" % (what, type(value).__name__, e)) from None


def unpack_value(buffer):
    return msgpack.unpackb(buffer, raw=False, strict_map_key=False, unicode_errors="surrogateescape")


def _pack_args(args, kwargs, name):
    if kwargs:
        raise TypeError("%s: C++ functions take positional arguments only, not keyword arguments (%s)" % (name, ", ".join(kwargs)))
    return [a if isinstance(a, ObjectRef) else pack_value(a, "argument %d of %s" % (i, name))
            for i, a in enumerate(args)]


class CppFunction:
    def __init__(self, name, options=None):
        if not isinstance(name, str) or not name:
            raise ValueError("cpp_function needs the C++ function's registered name, e.g. \"Plus\"")
        self._name = name
        self._options = dict(options or {})
        _options.check(self._options, _options.TASK_OPTIONS, "a C++ function")
        self._core_options = _options.task_options(self._options)
        self._core_options["language"] = LANGUAGE_CPP

    def options(self, **options):
        merged = dict(self._options)
        merged.update(options)
        return CppFunction(self._name, merged)

    def remote(self, *args, **kwargs):
        from orb import _check_initialized
        _check_initialized("remote")
        return _core.submit_task(self._name, _pack_args(args, kwargs, self._name), self._core_options)


class CppActorClass:
    def __init__(self, create_function_name, class_name=None, options=None):
        if not isinstance(create_function_name, str) or not create_function_name:
            raise ValueError("cpp_actor_class needs the factory's registered name, e.g. \"Counter::Create\"")
        if class_name is None:
            if "::" not in create_function_name:
                raise ValueError("cpp_actor_class(%r): give class_name, or a factory named Class::Factory"
                                 % create_function_name)
            class_name = create_function_name.rsplit("::", 1)[0]
        self._factory = create_function_name
        self._class_name = class_name
        self._options = dict(options or {})
        _options.check(self._options, _options.ACTOR_OPTIONS, "a C++ actor class")
        self._core_options = _options.actor_options(self._options)
        self._core_options["language"] = LANGUAGE_CPP

    def options(self, **options):
        merged = dict(self._options)
        merged.update(options)
        return CppActorClass(self._factory, self._class_name, merged)

    def remote(self, *args, **kwargs):
        from orb import _check_initialized
        _check_initialized("remote")
        actor_id = _core.create_actor(self._factory, _pack_args(args, kwargs, self._factory), self._core_options)
        return CppActorHandle(actor_id, self._class_name)


class _CppActorMethod:
    def __init__(self, handle, name):
        self._handle = handle
        self._name = name

    def remote(self, *args, **kwargs):
        return _core.submit_actor_task(self._handle._actor_id, self._name, _pack_args(args, kwargs, self._name),
                                       {"language": LANGUAGE_CPP}, None)


class CppActorHandle:
    """A handle to a C++ actor: `handle.Add.remote(1)` calls Class::Add."""

    def __init__(self, actor_id, class_name):
        self._actor_id = actor_id
        self._class_name = class_name

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _CppActorMethod(self, "%s::%s" % (self._class_name, name))

    @property
    def actor_id(self):
        return self._actor_id.hex()

    def __repr__(self):
        return "CppActor(%s, %s)" % (self._class_name, self._actor_id.hex())

    def __reduce__(self):
        return CppActorHandle, (self._actor_id, self._class_name)


def cpp_function(name):
    return CppFunction(name)


def cpp_actor_class(create_function_name, class_name=None):
    return CppActorClass(create_function_name, class_name)

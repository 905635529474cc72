"""@orb.remote classes: actors. `Cls.remote(*args)` starts one and returns its handle;
`handle.method.remote(*args)` calls a method (in order, one at a time unless
max_concurrency says otherwise; `async def` methods run on the worker's asyncio loop,
many at once). Handles pickle: pass them to tasks and other actors.

As in Ray, an actor with neither a name nor `lifetime="detached"` lives as long as a
handle to it does, in any process: once the last goes (and the calls sent through it
are done) the actor is killed, and its process and resources are freed."""
import inspect

from orb import _arguments, _core, _export, _options
from orb._generator import ObjectRefGenerator


def exit_actor():
    """Ends the actor this is called in, after answering the current call (Ray's
    ray.actor.exit_actor())."""
    if not _core.current_actor_id():
        raise TypeError("exit_actor() called outside an actor")
    raise _core.ActorExit()


def _is_async_class(cls):
    return any(inspect.iscoroutinefunction(m) or inspect.isasyncgenfunction(m)
               for _, m in inspect.getmembers(cls, predicate=inspect.isfunction))


def _method_names(cls):
    """The methods a handle calls: functions, static methods and class methods."""
    return frozenset(name for name, _ in inspect.getmembers(
        cls, predicate=lambda m: inspect.isfunction(m) or inspect.ismethod(m)))


def _method_options(cls, methods, backpressure=None):
    """The options @orb.method gave the class's methods, by name; a generator method
    streams by default (num_returns="streaming"), as in Ray, with the actor's
    `backpressure` (_actor_generator_backpressure_num_objects) unless it has its own."""
    out = {}
    for name in methods:
        method = getattr(cls, name, None)
        options = dict(getattr(method, "__orb_method_options__", None) or {})
        if inspect.isgeneratorfunction(method) or inspect.isasyncgenfunction(method):
            options.setdefault("num_returns", _options.STREAMING)
            if backpressure is not None:
                options.setdefault("_generator_backpressure_num_objects", backpressure)
        if options:
            out[name] = options
    return out


def _method_signatures(cls, methods):
    """The signatures of the class's plain methods (and constructor) without self."""
    out = {}
    for name in methods:
        if isinstance(inspect.getattr_static(cls, name, None), (staticmethod, classmethod)):
            continue
        signature = _arguments.signature_of(getattr(cls, name), bound=True)
        if signature is not None:
            out[name] = signature
    return out


# An async actor runs up to this many calls at once unless max_concurrency says (Ray's).
ASYNC_DEFAULT_CONCURRENCY = 1000


class ActorClass:
    def __init__(self, cls, options):
        _options.check(options, _options.ACTOR_OPTIONS, "an actor class")
        self._cls = cls
        self._options = dict(options)
        self._core_options = _options.actor_options(self._options)
        # Its creation task's name in the state API, the dashboard and the timeline (Ray's).
        self._core_options["task_name"] = "%s.__init__" % cls.__qualname__
        if "max_concurrency" not in self._options and _is_async_class(cls):
            self._core_options["max_concurrency"] = ASYNC_DEFAULT_CONCURRENCY
        self._methods = _method_names(cls)
        self._signatures = _method_signatures(cls, self._methods)
        backpressure = self._options.get("_actor_generator_backpressure_num_objects")
        if backpressure is not None and backpressure != -1 and backpressure < 1:
            raise ValueError("_actor_generator_backpressure_num_objects must be > 0 (or -1: no bound), not %r"
                             % (backpressure,))
        self._method_options = _method_options(cls, self._methods, backpressure)
        self._groups = _options.concurrency_groups(self._options)
        for name, method_options in self._method_options.items():
            _options.concurrency_group(method_options, self._groups, "%s.%s" % (cls.__qualname__, name))
        self._descriptor = None
        self._pickled = None
        self.__name__ = cls.__name__
        self.__qualname__ = cls.__qualname__
        self.__doc__ = cls.__doc__

    def __getattr__(self, name):
        """The class's own attributes — class attributes, static methods, class methods —
        read through the actor class, as in Ray."""
        cls = self.__dict__.get("_cls")
        if cls is None or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        try:
            return getattr(cls, name)
        except AttributeError:
            raise AttributeError("actor class %s has no attribute %r" % (cls.__qualname__, name)) from None

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(dir(self._cls)))

    def _remote(self, args=None, kwargs=None, **options):
        """Ray's Cls._remote(args=, kwargs=, **options): .options(**options).remote(...)."""
        return (self.options(**options) if options else self).remote(*(args or ()), **(kwargs or {}))

    def __mro_entries__(self, bases):
        raise TypeError("Inheriting from actor classes is not currently supported (as in Ray): inherit from the "
                        "plain class %s and make the subclass an actor class with @orb.remote" % self._cls.__qualname__)

    def __call__(self, *args, **kwargs):
        raise TypeError("actor class %s cannot be instantiated directly: use %s.remote(...)" % (
            self._cls.__qualname__, self._cls.__name__))

    def options(self, **options):
        if "concurrency_groups" in options:  # as Ray's: they belong to the class
            raise ValueError("concurrency_groups cannot be set in .options(): give them to @orb.remote")
        merged = dict(self._options)
        merged.update(options)
        return ActorClass(self._cls, merged)

    def remote(self, *args, **kwargs):
        from orb import _check_initialized
        _check_initialized("remote")
        if self._options.get("get_if_exists") and self._options.get("name"):
            found = _core.get_named_actor(self._options["name"], self._options.get("namespace") or "")
            if found:
                return self._handle(found)
        if self._descriptor is None:
            self._descriptor, self._pickled = _export.descriptor_of(self._cls)
        _export.export(self._descriptor, self._pickled)
        _arguments.check_call(self._signatures.get("__init__"), args, kwargs, self._cls.__qualname__)
        packed = _arguments.pack(args, kwargs, self._cls.__qualname__)
        actor_id = _core.create_actor(self._descriptor, packed, self._core_options)
        # As Ray's: an actor with neither a name nor a detached lifetime lives as long as
        # a handle to it does, in any process.
        collected = not self._options.get("name") and self._options.get("lifetime") != "detached"
        return self._handle(actor_id, _core.track_actor(actor_id) if collected else None)

    def _handle(self, actor_id, lifetime_ref=None):
        return ActorHandle(actor_id, self._cls.__qualname__, self._methods, self._signatures, self._method_options,
                           lifetime_ref, self._groups)

    def __reduce__(self):
        return ActorClass, (self._cls, self._options)


def handle_of(actor_id, cls):
    """A handle to actor `actor_id` (binary) of class `cls` (None: not known here) that
    does not keep the actor alive."""
    if cls is None:
        return ActorHandle(actor_id, "")
    methods = _method_names(cls)
    return ActorHandle(actor_id, cls.__qualname__, methods, _method_signatures(cls, methods),
                       _method_options(cls, methods))


class ActorMethod:
    def __init__(self, handle, name, options=None):
        self._handle = handle
        self._name = name
        self._options = options or {}
        self._num_returns = _options.num_returns(self._options)

    def remote(self, *args, **kwargs):
        name = "%s.%s" % (self._handle._class_name, self._name)
        _arguments.check_call(self._handle._signatures.get(self._name), args, kwargs, name)
        packed = _arguments.pack(args, kwargs, name, dynamic_returns=self._num_returns == _options.DYNAMIC)
        refs = _core.submit_actor_task(self._handle._actor_id, self._name, packed, self._core_options(),
                                       self._handle._lifetime_ref)
        if self._num_returns == _options.STREAMING:
            return ObjectRefGenerator(refs)
        return None if self._num_returns == 0 else refs

    def options(self, **options):
        _options.check(options, _options.METHOD_OPTIONS, "an actor method")
        merged = dict(self._options)
        merged.update(options)
        return ActorMethod(self._handle, self._name, merged)

    def _core_options(self):
        out = {"language": _options.LANGUAGE_PYTHON}
        out.update(_options.returns_options(self._options))
        group = _options.concurrency_group(self._options, self._handle._groups,
                                           "%s.%s" % (self._handle._class_name, self._name))
        if group:
            out["concurrency_group"] = group
        if self._options.get("name"):
            out["name"] = str(self._options["name"])
        else:  # Ray's name for a call: Class.method
            class_name = self._handle._class_name
            out["name"] = "%s.%s" % (class_name, self._name) if class_name else self._name
        return out

    def __call__(self, *args, **kwargs):
        raise TypeError("actor method %s cannot be called directly: use .%s.remote(...)" % (self._name, self._name))


class ActorHandle:
    """A handle to an actor. Method names are checked when the class is known here (a
    handle from get_actor() or from another process checks them at the worker)."""

    def __init__(self, actor_id, class_name, methods=None, signatures=None, method_options=None, lifetime_ref=None,
                 groups=None):
        self._actor_id = actor_id
        self._groups = groups  # its concurrency groups, where known here
        # An actor collected with its handles: the ref every handle (and call) holds, whose
        # release everywhere ends the actor (orb._core.track_actor); None otherwise.
        self._lifetime_ref = lifetime_ref
        self._class_name = class_name
        self._methods = methods
        self._signatures = signatures or {}  # where the class is known here: calls are checked
        self._method_options = method_options or {}  # @orb.method's, by method name

    def __getattr__(self, name):
        if name in ("__ray_terminate__", "__ray_ready__"):  # Ray's built-in methods of every actor
            return ActorMethod(self, name)
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if self._methods is not None and name not in self._methods:
            raise AttributeError("actor class %s has no method %r" % (self._class_name, name))
        return ActorMethod(self, name, self._method_options.get(name))

    @property
    def actor_id(self):
        return self._actor_id.hex()

    def __dir__(self):
        # As Ray's: what a handle calls, and nothing else.
        return sorted(set(self._methods or ()) | {"__init__", "__ray_terminate__"})

    def __repr__(self):
        return "Actor(%s, %s)" % (self._class_name, self._actor_id.hex())

    def __eq__(self, other):
        return isinstance(other, ActorHandle) and other._actor_id == self._actor_id

    def __hash__(self):
        return hash(self._actor_id)

    def __reduce__(self):
        return ActorHandle, (self._actor_id, self._class_name, self._methods, None, self._method_options,
                             self._lifetime_ref, self._groups)

"""@orb.remote classes: actors. `Cls.remote(*args)` starts one and returns its handle;
`handle.method.remote(*args)` calls a method (in order, one at a time unless
max_concurrency says otherwise; `async def` methods run on the worker's asyncio loop,
many at once). Handles pickle: pass them to tasks and other actors.

As in Ray, an actor without `lifetime="detached"` lives as long as a handle to it does,
in any process: once the last goes (and the calls sent through it are done) the actor is
killed, and its process and resources are freed. A named actor too: a handle that
orb.get_actor() finds does not keep it (Ray's weak reference)."""
import inspect
import uuid

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
            if options.get("num_returns") is None:  # unset or None: a generator streams, as in Ray
                options["num_returns"] = _options.STREAMING
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


class _ActorClassMethodMetadata:
    """What a handle knows of its actor's class: its name, methods, their signatures
    (where the class is known here: calls are checked before they are sent), their
    @orb.method options and the concurrency groups. One per class in each process (Ray's
    cache of the same name): the handles of an actor class, and every handle unpickled
    here from them, share it."""

    _cache = {}
    _PROCESS = uuid.uuid4().hex  # keys made here are this process's own

    def __init__(self, key, class_name, methods, signatures, method_options, groups):
        self.key = key
        self.class_name = class_name
        self.methods = methods
        self.signatures = signatures or {}
        self.method_options = method_options or {}
        self.groups = groups
        self.plans = {}  # method name -> the _CallPlan of its calls with its own options

    @classmethod
    def of_class(cls, actor_class, backpressure=None, groups=None):
        key = (cls._PROCESS, id(actor_class), backpressure, tuple(sorted((groups or {}).items())))
        found = cls._cache.get(key)
        if found is None:
            methods = _method_names(actor_class)
            found = cls._cache[key] = cls(key, actor_class.__qualname__, methods,
                                          _method_signatures(actor_class, methods),
                                          _method_options(actor_class, methods, backpressure), groups)
            found.actor_class = actor_class  # its id() stays this class's while the entry lives
        return found

    @classmethod
    def unpickled(cls, key, class_name, methods, method_options, groups):
        """The metadata a handle pickled elsewhere names (its signatures stay there)."""
        found = cls._cache.get(key)
        if found is None:
            found = cls._cache[key] = cls(key, class_name, methods, None, method_options, groups)
        return found

    def __reduce__(self):
        return _ActorClassMethodMetadata.unpickled, (self.key, self.class_name, self.methods, self.method_options,
                                                     self.groups)


# An async actor runs up to this many calls at once unless max_concurrency says (Ray's).
ASYNC_DEFAULT_CONCURRENCY = 1000


class ActorClassInheritanceException(TypeError):
    """A class inherits from an actor class (Ray's name): inherit from the plain class."""


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
        backpressure = self._options.get("_actor_generator_backpressure_num_objects")
        if backpressure is not None and backpressure != -1 and backpressure < 1:
            raise ValueError("_actor_generator_backpressure_num_objects must be > 0 (or -1: no bound), not %r"
                             % (backpressure,))
        groups = _options.concurrency_groups(self._options)
        self._meta = _ActorClassMethodMetadata.of_class(cls, backpressure, groups)
        for name, method_options in self._meta.method_options.items():
            _options.concurrency_group(method_options, groups, "%s.%s" % (cls.__qualname__, name))
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
        raise ActorClassInheritanceException("Inheriting from actor classes is not currently supported (as in Ray): inherit from the "
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
        if self._options.get("get_if_exists"):
            found = self._named_actor()
            if found:
                return self._handle(found)
        if self._descriptor is None:
            self._descriptor, self._pickled = _export.descriptor_of(self._cls)
        _export.export(self._descriptor, self._pickled)
        _arguments.check_call(self._meta.signatures.get("__init__"), args, kwargs, self._cls.__qualname__)
        packed = _arguments.pack(args, kwargs, self._cls.__qualname__)
        try:
            actor_id = _core.create_actor(self._descriptor, packed, self._core_options)
        except _core.NameTakenError:  # a ValueError, as Ray's
            # With get_if_exists: another caller created it since the lookup above.
            found = self._named_actor() if self._options.get("get_if_exists") else None
            if not found:
                raise
            return self._handle(found)
        # As Ray's: an actor without a detached lifetime lives as long as a handle to it
        # does, in any process (named or not).
        import orb
        collected = (self._options.get("lifetime") or orb._default_actor_lifetime) != "detached"
        return self._handle(actor_id, _core.track_actor(actor_id) if collected else None)

    def _named_actor(self):
        return _core.get_named_actor(self._options["name"], self._options.get("namespace") or "")

    def _handle(self, actor_id, lifetime_ref=None):
        return ActorHandle(actor_id, self._meta, lifetime_ref)

    def __reduce__(self):
        return ActorClass, (self._cls, self._options)


def handle_of(actor_id, cls):
    """A handle to actor `actor_id` (binary) of class `cls` (None: not known here) that
    does not keep the actor alive."""
    return ActorHandle(actor_id, _ActorClassMethodMetadata.of_class(cls) if cls is not None else None)


class _CallPlan:
    """What every call of one method with one set of options sends, worked out once: its
    name, the signature its arguments are checked against, its returns and the core's
    options."""

    def __init__(self, meta, method, options):
        class_name = meta.class_name
        self.name = "%s.%s" % (class_name, method)
        self.signature = meta.signatures.get(method)
        self.bounds = _arguments.positional_bounds(self.signature)
        self.num_returns = _options.num_returns(options)
        core = {"language": _options.LANGUAGE_PYTHON}
        core.update(_options.returns_options(options))
        group = _options.concurrency_group(options, meta.groups, self.name)
        if group:
            core["concurrency_group"] = group
        if options.get("name"):
            core["name"] = str(options["name"])
        else:  # Ray's name for a call: Class.method
            core["name"] = self.name if class_name else method
        self.core_options = core


class ActorMethod:
    def __init__(self, handle, name, options=None):
        self._handle = handle
        self._name = name
        self._options = options or {}
        self._plan = None

    def _call_plan(self):
        if self._plan is None:
            meta = self._handle._meta
            if self._options is meta.method_options.get(self._name, {}) or not self._options:
                plan = meta.plans.get(self._name)  # the method's own options: one plan per class
                if plan is None:
                    plan = meta.plans[self._name] = _CallPlan(meta, self._name, self._options)
            else:
                plan = _CallPlan(meta, self._name, self._options)
            self._plan = plan
        return self._plan

    def remote(self, *args, **kwargs):
        plan = self._call_plan()
        _arguments.check_call(plan.signature, args, kwargs, plan.name, plan.bounds)
        packed = _arguments.pack(args, kwargs, plan.name, dynamic_returns=plan.num_returns == _options.DYNAMIC)
        refs = _core.submit_actor_task(self._handle._actor_id, self._name, packed, plan.core_options,
                                       self._handle._lifetime_ref)
        if plan.num_returns == _options.STREAMING:
            return ObjectRefGenerator(refs)
        return None if plan.num_returns == 0 else refs

    def options(self, **options):
        _options.check(options, _options.METHOD_OPTIONS, "an actor method")
        merged = dict(self._options)
        merged.update(options)
        if options.get("num_returns", 0) is None:  # Ray's: the method's default
            merged.pop("num_returns")
            if "num_returns" in self._options:
                merged["num_returns"] = self._options["num_returns"]
        return ActorMethod(self._handle, self._name, merged)

    def __call__(self, *args, **kwargs):
        raise TypeError("actor method %s cannot be called directly: use .%s.remote(...)" % (self._name, self._name))


class ActorHandle:
    """A handle to an actor. Method names are checked when the class is known here (a
    handle from get_actor() or from another process checks them at the worker)."""

    def __init__(self, actor_id, meta=None, lifetime_ref=None):
        """meta: its class's _ActorClassMethodMetadata, or a name only (get_actor: the
        class is not known here)."""
        self._actor_id = actor_id
        if not isinstance(meta, _ActorClassMethodMetadata):
            meta = _ActorClassMethodMetadata(None, meta or "", None, None, None, None)
        self._meta = meta
        # An actor collected with its handles: the ref every handle (and call) holds, whose
        # release everywhere ends the actor (orb._core.track_actor); None otherwise.
        self._lifetime_ref = lifetime_ref
        self._class_name = meta.class_name
        self._methods = meta.methods  # None: not known here
        self._signatures = meta.signatures  # where the class is known here: calls are checked
        self._method_options = meta.method_options  # @orb.method's, by method name
        self._groups = meta.groups  # its concurrency groups, where known here

    def __getattr__(self, name):
        if name in ("__ray_terminate__", "__ray_ready__", "__ray_call__"):  # Ray's built-in methods of every actor
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
        meta = self._meta if self._meta.key is not None else self._class_name
        return ActorHandle, (self._actor_id, meta, self._lifetime_ref)

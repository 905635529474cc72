"""@orb.remote functions: `f.remote(*args)` runs f on a worker and returns an ObjectRef."""
import functools
import inspect

from orb import _arguments, _core, _export, _options
from orb._generator import ObjectRefGenerator


class RemoteFunction:
    def __init__(self, function, options):
        _options.check(options, _options.TASK_OPTIONS, "a remote function")
        if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
            raise ValueError("'async def' %s cannot be a remote function (as in Ray): call it with asyncio.run() "
                             "in a plain function, or make it a method of an actor (async actors run it on their "
                             "event loop)" % function.__qualname__)
        self._function = function
        self._options = dict(options)
        if inspect.isgeneratorfunction(function) and options.get("num_returns") is None:
            self._options["num_returns"] = _options.STREAMING  # as Ray's: a generator streams
        self._core_options = _options.task_options(self._options)
        # Ray's name for a task: its function's (the state API, dashboard and timeline).
        self._core_options.setdefault("name", function.__qualname__)
        self._no_returns = _options.num_returns(self._options) == 0  # as Ray's: .remote() gives None
        self._descriptor = None
        self._pickled = None
        self._signature = _arguments.signature_of(function)
        self._bounds = _arguments.positional_bounds(self._signature)
        self._dynamic = self._options.get("num_returns") == _options.DYNAMIC
        self._streaming = bool(self._core_options.get("streaming"))
        functools.update_wrapper(self, function)

    def __call__(self, *args, **kwargs):
        raise TypeError("remote function %s cannot be called directly: use %s.remote(...)" % (
            self._function.__qualname__, self._function.__name__))

    def options(self, **options):
        """A copy of this function with `options` (Ray's names) replacing its own."""
        merged = dict(self._options)
        merged.update(options)
        return RemoteFunction(self._function, merged)

    def _remote(self, args=None, kwargs=None, **options):
        """Ray's f._remote(args=, kwargs=, **options): .options(**options).remote(...)."""
        return (self.options(**options) if options else self).remote(*(args or ()), **(kwargs or {}))

    def remote(self, *args, **kwargs):
        from orb import _check_initialized
        _check_initialized("remote")
        if self._descriptor is None:
            self._descriptor, self._pickled = _export.descriptor_of(self._function)
        _export.export(self._descriptor, self._pickled)
        _arguments.check_call(self._signature, args, kwargs, self._function.__qualname__, self._bounds)
        packed = _arguments.pack(args, kwargs, self._function.__qualname__, dynamic_returns=self._dynamic)
        refs = _core.submit_task(self._descriptor, packed, self._core_options)
        if self._streaming:
            return ObjectRefGenerator(refs)
        return None if self._no_returns else refs

    def __reduce__(self):
        return RemoteFunction, (self._function, self._options)

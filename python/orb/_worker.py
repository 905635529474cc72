"""A Python worker: `python -m orb._worker`, started by a raylet for a job's Python
tasks and actors. orb._core.run_worker serves tasks; it calls this executor (holding
the GIL) to run a function, make an actor, or call its method, each by name.

A function that raises makes its result a TaskError value (the exception and its
traceback, raised again by whoever reads it); the worker keeps serving."""
import asyncio
import concurrent.futures
import importlib
import inspect
import signal
import sys
import threading

from orb import _arguments, _core, _export
from orb._serialization import RawValue, Serialized, serialize_error
from orb.cross_language import pack_value, unpack_value

# Calls from C++ name "pyx:<module>:<name>" (a method: "pyx:<name>"); their values are
# msgpack, and a failure is raised to the C++ core (the caller's TaskError), not stored.
CROSS = "pyx:"


def _import(descriptor):
    _, module_name, name = descriptor.split(":", 2)
    try:
        target = importlib.import_module(module_name)
    except ImportError as e:
        raise ImportError("cannot import module %r for %s on this worker (is it on the job's code_search_path?): %s"
                          % (module_name, name, e)) from e
    for part in name.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise AttributeError("module %r has no %r" % (module_name, name)) from None
    return target


def _cross_args(args):
    return [unpack_value(bytes(a)) for a in args]


def _cross_result(value, name):
    return RawValue(pack_value(value, "the result of %s" % name))


class Executor:
    def __init__(self):
        self._loop = None
        self._loop_lock = threading.Lock()
        self._async_calls = {}  # thread ident -> the future of the async call it waits for

    def run_task(self, descriptor, args):
        if descriptor.startswith(CROSS):
            try:
                return _cross_result(_import(descriptor)(*_cross_args(args)), descriptor[len(CROSS):])
            finally:
                _flush()
        name = descriptor.split(":")[1] if descriptor.count(":") >= 2 else descriptor
        try:
            function = _export.load(descriptor)
            positional, keywords = _arguments.unpack(args)
            return self._result(function(*positional, **keywords), name)
        except Exception as e:  # the task's failure is its result
            return serialize_error(name, e)
        finally:
            _flush()

    def create_actor(self, descriptor, args):
        if descriptor.startswith(CROSS):
            try:
                return _import(descriptor)(*_cross_args(args))
            finally:
                _flush()
        cls = _export.load(descriptor)
        positional, keywords = _arguments.unpack(args)
        try:
            return cls(*positional, **keywords)
        finally:
            _flush()

    def call_method(self, instance, name, args):
        if name.startswith(CROSS):
            name = name[len(CROSS):]
            qualified = "%s.%s" % (type(instance).__qualname__, name)
            try:
                return _cross_result(self._invoke(getattr(instance, name), _cross_args(args), {}), qualified)
            finally:
                _flush()
        qualified = "%s.%s" % (type(instance).__qualname__, name)
        try:
            method = getattr(instance, name, None)
            if method is None or not callable(method):
                raise AttributeError("actor class %s has no method %r" % (type(instance).__qualname__, name))
            positional, keywords = _arguments.unpack(args)
            return self._result(self._invoke(method, positional, keywords), qualified)
        except _core.ActorExit:
            raise
        except Exception as e:
            return serialize_error(qualified, e)
        finally:
            _flush()

    def _invoke(self, method, positional, keywords):
        """Calls a method; an `async def` one runs on the event loop while this thread waits."""
        if inspect.iscoroutinefunction(method):
            future = asyncio.run_coroutine_threadsafe(method(*positional, **keywords), self._event_loop())
            ident = threading.get_ident()
            self._async_calls[ident] = future
            try:
                return future.result()
            except concurrent.futures.CancelledError:
                if future.cancelled():  # by orb.cancel: the call ends cancelled, not failed
                    raise KeyboardInterrupt("the call was cancelled") from None
                raise
            finally:
                self._async_calls.pop(ident, None)
        return method(*positional, **keywords)

    def cancel_async_call(self, ident):
        """orb.cancel of the actor call running on thread `ident`: cancels its coroutine
        when it is an async call (a sync call runs on); whether it did."""
        future = self._async_calls.get(ident)
        return future is not None and future.cancel()

    @staticmethod
    def _result(value, name):
        return Serialized(value, what="the result of %s" % name)

    def _event_loop(self):
        """The asyncio loop async methods run on (a thread of its own, started once)."""
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="orb-asyncio", daemon=True).start()
                self._loop = loop
            return self._loop


def _flush():
    sys.stdout.flush()
    sys.stderr.flush()


def _on_sigint(signum, frame):
    # orb.cancel interrupts the running task with SIGINT; any other SIGINT is ignored
    # (the worker's life is the raylet's to end).
    if _core.take_interrupt():
        raise KeyboardInterrupt("the task was cancelled")


def main():
    signal.signal(signal.SIGINT, _on_sigint)
    _core.run_worker(Executor())


if __name__ == "__main__":
    main()

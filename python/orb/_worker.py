"""A Python worker: `python -m orb._worker`, started by a raylet for a job's Python
tasks and actors. orb._core.run_worker serves tasks; it calls this executor (holding
the GIL) to run a function, make an actor, or call its method, each by name.

A function that raises makes its result a TaskError value (the exception and its
traceback, raised again by whoever reads it); the worker keeps serving."""
import asyncio
import inspect
import sys
import threading

from orb import _arguments, _core, _export
from orb._serialization import Serialized, serialize_error


class Executor:
    def __init__(self):
        self._loop = None
        self._loop_lock = threading.Lock()

    def run_task(self, descriptor, args):
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
        cls = _export.load(descriptor)
        positional, keywords = _arguments.unpack(args)
        try:
            return cls(*positional, **keywords)
        finally:
            _flush()

    def call_method(self, instance, name, args):
        qualified = "%s.%s" % (type(instance).__qualname__, name)
        try:
            method = getattr(instance, name, None)
            if method is None or not callable(method):
                raise AttributeError("actor class %s has no method %r" % (type(instance).__qualname__, name))
            positional, keywords = _arguments.unpack(args)
            if inspect.iscoroutinefunction(method):
                result = asyncio.run_coroutine_threadsafe(method(*positional, **keywords), self._event_loop()).result()
            else:
                result = method(*positional, **keywords)
            return self._result(result, qualified)
        except _core.ActorExit:
            raise
        except Exception as e:
            return serialize_error(qualified, e)
        finally:
            _flush()

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


def main():
    _core.run_worker(Executor())


if __name__ == "__main__":
    main()

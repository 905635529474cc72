"""A Python worker: `python -m orb._worker`, started by a raylet for a job's Python
tasks and actors. orb._core.run_worker serves tasks; it calls this executor (holding
the GIL) to run a function, make an actor, or call its method, each by name.

A function that raises makes its result a TaskError value (the exception and its
traceback, raised again by whoever reads it); the worker keeps serving."""
import asyncio
import atexit
import concurrent.futures
import functools
import importlib
import inspect
import os
import pickle
import queue
import signal
import sys
import threading

from orb import _arguments, _core, _export
from orb.actor import ActorClass, _is_async_class
from orb._generator import DynamicObjectRefGenerator
from orb._serialization import RawValue, Serialized, serialize_error
from orb.cross_language import pack_value, unpack_value
from orb.remote_function import RemoteFunction

# The num_returns the core asks of a streaming generator task.
STREAMING = -1
_END = object()  # the end of an async generator's items

# The Python class of the actor this worker hosts, once its constructor runs.
current_actor_class = None
# Threads whose current task or call orb.cancel interrupted (get_runtime_context().is_canceled()).
cancelled_threads = set()

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
    # Decorated with @orb.remote (as Ray's cross-language modules write them): C++ makes
    # or calls what is underneath.
    if isinstance(target, ActorClass):
        return target._cls
    if isinstance(target, RemoteFunction):
        return target._function
    return target


# What the core sets in the environment for each lease (its GPUs, its CPUs): copied into
# os.environ before a task runs, since os.environ is a copy made when Python started.
LEASE_ENV = ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
             "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT")


def _sync_lease_env():
    for name in LEASE_ENV:
        value = _core.c_getenv(name)
        if value is None:
            os.environ.pop(name, None)
        elif os.environ.get(name) != value:
            os.environ[name] = value


_allowlists = {}  # pickled retry_exceptions allowlist -> its classes


def _retried_for(error):
    """Whether the running task is retried for `error` (its retry_exceptions)."""
    allowlist = _core.retry_exceptions()
    if allowlist is None:
        return False
    if not allowlist:
        return True
    classes = _allowlists.get(allowlist)
    if classes is None:
        classes = _allowlists[allowlist] = pickle.loads(allowlist)
    return isinstance(error, classes)


def _cross_args(args):
    return [unpack_value(bytes(a)) for a in args]


def _cross_result(value, name):
    return RawValue(pack_value(value, "the result of %s" % name))


class Executor:
    def __init__(self):
        self._loop = None
        self._loop_lock = threading.Lock()
        self._async_calls = {}  # thread ident -> the future of the async call it waits for
        self._async_classes = {}  # actor class -> whether it is an async actor

    def run_task(self, descriptor, args, num_returns=1):
        _sync_lease_env()
        cancelled_threads.discard(threading.get_ident())
        if descriptor.startswith(CROSS):
            try:
                return _cross_result(_import(descriptor)(*_cross_args(args)), descriptor[len(CROSS):])
            finally:
                _flush()
        name = descriptor.split(":")[1] if descriptor.count(":") >= 2 else descriptor
        try:
            function = _export.load(descriptor)
            positional, keywords, dynamic = _arguments.unpack_call(args)
            value = function(*positional, **keywords)
            if dynamic:
                return self._dynamic_returns(value, name)
            return self._results(value, name, num_returns)
        except Exception as e:  # the task's failure is its result (every return's)
            if _retried_for(e):
                _core.mark_retryable_error()
            return serialize_error(name, e)
        finally:
            _flush()

    def create_actor(self, descriptor, args):
        _sync_lease_env()
        if descriptor.startswith(CROSS):
            try:
                return _import(descriptor)(*_cross_args(args))
            finally:
                _flush()
        cls = _export.load(descriptor)
        global current_actor_class
        current_actor_class = cls  # for get_runtime_context().current_actor
        positional, keywords = _arguments.unpack(args)
        try:
            return cls(*positional, **keywords)
        finally:
            _flush()

    def call_method(self, instance, name, args, num_returns=1):
        if name.startswith(CROSS):
            name = name[len(CROSS):]
            qualified = "%s.%s" % (type(instance).__qualname__, name)
            try:
                return _cross_result(self._invoke(getattr(instance, name), _cross_args(args), {}), qualified)
            finally:
                _flush()
        qualified = "%s.%s" % (type(instance).__qualname__, name)
        cancelled_threads.discard(threading.get_ident())
        if name == "__ray_terminate__":  # Ray's graceful end: after the calls before it
            _run_exit_handlers()
            raise _core.ActorExit()
        if name == "__ray_ready__":  # Ray's readiness probe: the constructor has run
            return Serialized(True, what="the readiness of %s" % qualified)
        try:
            positional, keywords, dynamic = _arguments.unpack_call(args)
            if name == "__ray_call__":  # Ray's: fn(the actor's instance, *args, **kwargs), in the actor
                if not positional or not callable(positional[0]):
                    raise TypeError("__ray_call__ takes a function of the actor's instance first")
                method, positional = functools.partial(positional[0], instance), positional[1:]
            else:
                method = _method_of(instance, name)
            if self._is_async_actor(instance) and not inspect.iscoroutinefunction(method) \
                    and not inspect.isgeneratorfunction(method) and not inspect.isasyncgenfunction(method):
                value = self._on_loop(method, positional, keywords)
            elif num_returns == 1 and not dynamic and inspect.iscoroutinefunction(method):
                coroutine = method(*positional, **keywords)  # a bad argument raises here
                if self._defer(coroutine, qualified):
                    return None  # answered when its coroutine ends
                value = self._wait_for(coroutine)
            else:
                value = self._invoke(method, positional, keywords)
            if dynamic:
                return self._dynamic_returns(value, qualified)
            return self._results(value, qualified, num_returns)
        except _core.ActorExit:  # exit_actor(): a graceful end too
            _run_exit_handlers()
            raise
        except SystemExit:  # sys.exit() in an actor ends the actor, as in Ray
            _run_exit_handlers()
            raise _core.ActorExit() from None
        except Exception as e:
            return serialize_error(qualified, e)
        finally:
            _flush()

    def _is_async_actor(self, instance):
        cls = type(instance)
        found = self._async_classes.get(cls)
        if found is None:
            found = self._async_classes[cls] = _is_async_class(cls)
        return found

    def _on_loop(self, method, positional, keywords):
        """A sync method of an async actor runs on the actor's event loop thread, as in
        Ray: it may use the loop's objects (set an asyncio.Event an async method awaits).
        It runs to its end (a cancel does not stop it)."""
        async def call():
            return method(*positional, **keywords)
        return asyncio.run_coroutine_threadsafe(call(), self._event_loop()).result()

    def _defer(self, coroutine, qualified):
        """Runs an async method's coroutine on the event loop without holding this worker
        thread: the call is answered when the coroutine ends (orb._core.DeferredCall), so
        calls in flight cost no thread each. False when the call cannot be deferred (an
        actor that runs one call at a time): the caller then waits for it here."""
        deferred = _core.defer_call()
        if deferred is None:
            return False
        loop = self._event_loop()
        future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        self._async_calls[deferred.token] = future  # orb.cancel reaches it by its token

        def ended(done):
            if done.cancelled():  # inside orb.cancel's interrupt, which holds the call's record: answer later
                loop.call_soon_threadsafe(self._answer_deferred, deferred, done, qualified)
            else:  # on the loop, as the coroutine ends
                self._answer_deferred(deferred, done, qualified)
        future.add_done_callback(ended)
        return True

    def _answer_deferred(self, deferred, future, qualified):
        """Answers a deferred call from its ended coroutine: its value, its error, a cancel
        (the receiver makes that TASK_CANCELLED) or exit_actor()."""
        self._async_calls.pop(deferred.token, None)
        try:
            try:
                value = future.result()
            except concurrent.futures.CancelledError:
                deferred.fail("KeyboardInterrupt: the call was cancelled")
                return
            except (_core.ActorExit, SystemExit):  # a graceful end, as in a sync method
                _run_exit_handlers()
                deferred.exit_actor()
                return
            except Exception as e:
                deferred.complete(serialize_error(qualified, e))
                return
            try:
                result = self._results(value, qualified, 1)
            except Exception as e:  # a value that does not serialize
                result = serialize_error(qualified, e)
            deferred.complete(result)
        except BaseException as e:  # never leave the call unanswered
            deferred.fail("%s: %s" % (type(e).__name__, e))
        finally:
            _flush()

    def _invoke(self, method, positional, keywords):
        """Calls a method; an `async def` one runs on the event loop while this thread waits."""
        if inspect.iscoroutinefunction(method):
            return self._wait_for(method(*positional, **keywords))
        return method(*positional, **keywords)

    def _wait_for(self, coroutine):
        """Runs a coroutine on the event loop while this thread waits; orb.cancel of the
        call cancels it (by this thread's ID)."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._event_loop())
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

    def _stream(self, generator, name):
        """Hands each item the generator yields to the caller as it comes (waiting while
        the caller's backpressure says so); the number of items. Stops early when nobody
        reads the stream any more. An error the generator raises is its last item (as
        Ray's), unless the task is retried for it: then it is the task's error."""
        if inspect.isasyncgen(generator):
            generator = self._async_items(generator)
        elif not inspect.isgenerator(generator):
            raise TypeError("%s has num_returns=\"streaming\" but returned a %s, not a generator (use yield)"
                            % (name, type(generator).__name__))
        count = 0
        try:
            for item in generator:
                stop = _core.report_generator_item(Serialized(item, what="item %d of %s" % (count, name)))
                count += 1
                if stop:
                    break
        except Exception as e:
            if _retried_for(e):
                raise
            _core.report_generator_item(serialize_error(name, e))
            count += 1
        finally:
            generator.close()
        return count

    def _async_items(self, generator):
        """An async generator's items, made by one task on the actor's event loop (so the
        generator runs in one asyncio task throughout, as in Ray) and handed to this
        thread, which reports each; the task waits for each hand-off to finish, so the
        caller's backpressure pauses the generator. orb.cancel cancels the task."""
        loop = self._event_loop()
        handoff = queue.SimpleQueue()  # (item, taken) / (exception, None) / (_END, None)

        async def drive():
            try:
                async for item in generator:
                    taken = loop.create_future()  # True: nobody reads on, stop
                    handoff.put((item, taken))
                    if await taken:
                        break
            except BaseException as e:  # its error (or its cancel) ends the stream here
                handoff.put((e, None))
                return
            finally:
                await generator.aclose()
            handoff.put((_END, None))

        def answer(taken, stop):
            loop.call_soon_threadsafe(lambda: taken.done() or taken.set_result(stop))

        future = asyncio.run_coroutine_threadsafe(drive(), loop)
        ident = threading.get_ident()
        self._async_calls[ident] = future
        try:
            while True:
                item, taken = handoff.get()
                if taken is None:
                    if item is _END:
                        return
                    if isinstance(item, asyncio.CancelledError) and future.cancelled():
                        raise KeyboardInterrupt("the call was cancelled") from None
                    raise item
                try:
                    yield item
                except GeneratorExit:
                    answer(taken, True)
                    raise
                answer(taken, False)
        finally:
            self._async_calls.pop(ident, None)
            if not future.done():
                future.cancel()

    def cancel_async_call(self, ident):
        """orb.cancel of the actor call running on thread `ident`: cancels its coroutine
        when it is an async call (a sync call runs on); whether it did."""
        future = self._async_calls.get(ident)
        if future is None or not future.cancel():
            return False
        cancelled_threads.add(ident)
        return True

    def _results(self, value, name, num_returns):
        """The serialized result; with num_returns > 1, a list of one per return (the
        function returns that many values, as a tuple or list, as Ray requires); for a
        streaming generator, the count of the items it streamed."""
        if num_returns == STREAMING:
            return Serialized(self._stream(value, name), what="the item count of %s" % name)
        if inspect.isgenerator(value):
            returns = self._generator_returns(value, name, num_returns)
            return returns[0] if num_returns == 1 else returns
        if num_returns == 1:
            return Serialized(value, what="the result of %s" % name)
        if not isinstance(value, (tuple, list)) or len(value) != num_returns:
            got = "%d objects" % len(value) if isinstance(value, (tuple, list)) else "a %s" % type(value).__name__
            raise ValueError("%s returned %s, but num_returns=%d" % (name, got, num_returns))
        return [Serialized(v, what="return %d of %s" % (i + 1, name)) for i, v in enumerate(value)]

    def _dynamic_returns(self, generator, name):
        """num_returns="dynamic" (Ray's): each item the generator yields is put in the
        store, and the one result is a DynamicObjectRefGenerator of their refs. An error
        mid-way is the last item (the whole call's, when the task retries on it)."""
        if not inspect.isgenerator(generator):
            raise ValueError("%s has num_returns=\"dynamic\" but returned a %s, not a generator (use yield)"
                             % (name, type(generator).__name__))
        refs = []
        try:
            for item in generator:
                refs.append(_core.put(Serialized(item, what="item %d of %s" % (len(refs), name))))
        except Exception as e:
            if _retried_for(e):
                raise
            refs.append(_core.put(serialize_error(name, e)))
        finally:
            generator.close()
        return Serialized(DynamicObjectRefGenerator(refs), what="the items of %s" % name)

    def _generator_returns(self, generator, name, num_returns):
        """A generator with num_returns=N: its first N items are the returns, as Ray's. If
        it raises after k items, the returns from k on are that error; fewer than N items
        is a ValueError; items past N are dropped with a warning (Ray logs them too)."""
        returns = []
        try:
            for item in generator:
                if len(returns) == num_returns:
                    print("orb: %s yielded more than num_returns=%d items; the rest are dropped"
                          % (name, num_returns), file=sys.stderr)
                    break
                returns.append(Serialized(item, what="return %d of %s" % (len(returns) + 1, name)))
        except Exception as e:
            return returns + [serialize_error(name, e) for _ in range(num_returns - len(returns))]
        finally:
            generator.close()
        if len(returns) < num_returns:
            raise ValueError("%s returned %d objects, but num_returns=%d" % (name, len(returns), num_returns))
        return returns

    def _event_loop(self):
        """The asyncio loop async methods run on (a thread of its own, started once)."""
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="orb-asyncio", daemon=True).start()
                self._loop = loop
            return self._loop


_class_attributes = {}  # (actor class, name) -> what the class defines under it (None: nothing)


def _method_of(instance, name):
    """The method `name` as the class defines it, bound to the instance, as Ray looks
    methods up: an instance attribute of the same name (a method `reported` beside
    `self.reported = set()`) does not hide it. The class is searched once per name."""
    cls = type(instance)
    key = (cls, name)
    if key in _class_attributes:
        found = _class_attributes[key]
    else:
        try:
            found = inspect.getattr_static(cls, name)
        except AttributeError:
            found = None
        _class_attributes[key] = found
    if found is not None and hasattr(found, "__get__"):
        method = found.__get__(instance, cls)
    else:
        method = getattr(instance, name, None)
    if method is None or not callable(method):
        raise AttributeError("actor class %s has no method %r" % (cls.__qualname__, name))
    return method


def _run_exit_handlers():
    """The atexit handlers of a gracefully ending actor (exit_actor, __ray_terminate__),
    as Ray runs them: the process is then ended from outside. orb.kill runs none."""
    try:
        atexit._run_exitfuncs()
    finally:
        _flush()


def _flush():
    sys.stdout.flush()
    sys.stderr.flush()


def _on_sigint(signum, frame):
    # orb.cancel interrupts the running task with SIGINT; any other SIGINT is ignored
    # (the worker's life is the raylet's to end).
    if _core.take_interrupt():
        cancelled_threads.add(threading.get_ident())
        raise KeyboardInterrupt("the task was cancelled")


def main():
    # One module however it was started: orb.get_runtime_context() imports orb._worker.
    sys.modules["orb._worker"] = sys.modules[__name__]
    signal.signal(signal.SIGINT, _on_sigint)
    _core.run_worker(Executor())


if __name__ == "__main__":
    main()


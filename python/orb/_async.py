"""ObjectRefs in async code (Ray's): `await ref` gives the value without blocking the
event loop, `ref.future()` a concurrent.futures.Future of it, and `asyncio.gather(*refs)`
waits for many. The runtime calls back when the object is ready (orb._core.when_ready):
no thread waits per ref."""
import asyncio
import concurrent.futures
import traceback

from orb import _core


def future_of(ref):
    future = concurrent.futures.Future()

    def ready():
        from orb import get
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(get(ref))
        except BaseException as e:  # the object's error (TaskError, ObjectLostError...)
            future.set_exception(e)

    _core.when_ready(ref, ready)
    return future


def on_completed(ref, callback):
    """Ray's ObjectRef._on_completed: calls `callback` with the value (or the error) once
    the object is ready, on the runtime's notifier thread."""
    def call(future):
        try:
            callback(future.exception() or future.result())
        except Exception:  # printed, not kept: a kept traceback would hold the callback
            traceback.print_exc()
    future_of(ref).add_done_callback(call)


def awaitable_of(ref):
    return asyncio.wrap_future(future_of(ref))

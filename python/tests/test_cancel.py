"""orb.cancel (Ray's ray.cancel): queued tasks never run, running ones are interrupted
or killed, children go with their parent, actor calls as Ray treats them."""
import asyncio
import os
import tempfile
import time

import pytest

import orb
from orb.exceptions import TaskCancelledError


@pytest.fixture(scope="module")
def cluster():
    orb.init(num_cpus=2)
    yield
    orb.shutdown()


@pytest.fixture
def marks():
    """A directory where tasks leave marks, so a test can see what ran."""
    with tempfile.TemporaryDirectory(prefix="orb-cancel-") as d:
        yield d


@orb.remote
def sleep_then_mark(seconds, path):
    time.sleep(seconds)
    with open(path, "w") as f:
        f.write("ran")
    return "finished"


@orb.remote
def interruptible(path):
    try:
        time.sleep(60)
    except KeyboardInterrupt:
        with open(path, "w") as f:
            f.write("interrupted")
        raise
    return "not interrupted"


@orb.remote
def pid():
    return os.getpid()


def wait_for_file(path, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path):
            return True
        time.sleep(0.05)
    return False


def test_a_queued_task_never_runs(cluster, marks):
    # Both CPUs busy: the third task waits in the owner's queue.
    busy = [sleep_then_mark.remote(2, os.path.join(marks, "busy%d" % i)) for i in range(2)]
    queued = sleep_then_mark.remote(0, os.path.join(marks, "queued"))
    orb.cancel(queued)
    with pytest.raises(TaskCancelledError, match="cancelled before it ran"):
        orb.get(queued, timeout=10)
    assert orb.get(busy, timeout=30) == ["finished", "finished"]
    time.sleep(0.5)
    assert not os.path.exists(os.path.join(marks, "queued"))


def test_a_running_task_gets_keyboard_interrupt_and_its_worker_goes_on(cluster, marks):
    started = time.time()
    ref = interruptible.remote(os.path.join(marks, "interrupted"))
    time.sleep(1.5)  # running, inside time.sleep
    orb.cancel(ref)
    with pytest.raises(TaskCancelledError, match="cancelled while it ran"):
        orb.get(ref, timeout=20)
    assert time.time() - started < 15
    assert wait_for_file(os.path.join(marks, "interrupted"))
    # The same workers run later tasks undisturbed (no interrupt left over for them).
    assert orb.get([sleep_then_mark.remote(0.3, os.path.join(marks, "after%d" % i)) for i in range(4)],
                   timeout=30) == ["finished"] * 4


def test_force_kills_the_worker(cluster, marks):
    ref = sleep_then_mark.remote(30, os.path.join(marks, "forced"))
    time.sleep(1.5)
    orb.cancel(ref, force=True)
    with pytest.raises(TaskCancelledError):
        orb.get(ref, timeout=20)
    time.sleep(1)
    assert not os.path.exists(os.path.join(marks, "forced"))
    assert orb.get(pid.remote(), timeout=30) > 0  # a new worker serves on


@orb.remote
def parent(path):
    child = sleep_then_mark.remote(4, path)
    return orb.get(child)


def test_recursive_cancel_takes_the_children_too(cluster, marks):
    child_mark = os.path.join(marks, "child")
    ref = parent.remote(child_mark)
    time.sleep(2)  # the parent waits on its running child
    orb.cancel(ref)
    with pytest.raises(TaskCancelledError):
        orb.get(ref, timeout=20)
    time.sleep(4)
    assert not os.path.exists(child_mark), "the child ran to its end"


def test_a_finished_task_keeps_its_result(cluster):
    ref = pid.remote()
    value = orb.get(ref, timeout=30)
    orb.cancel(ref)
    assert orb.get(ref) == value


def test_only_task_results_of_this_process_can_be_cancelled(cluster):
    with pytest.raises(ValueError, match="made by Put"):
        orb.cancel(orb.put(1))
    with pytest.raises(TypeError):
        orb.cancel("not a ref")


@orb.remote
class Worker:
    def slow(self, seconds):
        time.sleep(seconds)
        return "slow done"

    def quick(self):
        return "quick done"


@orb.remote
class AsyncWorker:
    async def wait_forever(self):
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return "not cancelled"

    async def was_cancelled(self):
        return getattr(self, "cancelled", False)


def test_actor_calls_queued_are_cancelled_running_ones_finish(cluster):
    actor = Worker.remote()
    running = actor.slow.remote(2)
    queued = actor.quick.remote()
    time.sleep(0.5)
    orb.cancel(queued)
    orb.cancel(running)  # a sync actor call is not torn mid-way
    with pytest.raises(TaskCancelledError):
        orb.get(queued, timeout=20)
    assert orb.get(running, timeout=20) == "slow done"
    with pytest.raises(ValueError, match="actor call"):
        orb.cancel(actor.slow.remote(1), force=True)
    assert orb.get(actor.quick.remote(), timeout=20) == "quick done"


def test_an_async_actor_call_is_cancelled_in_its_coroutine(cluster):
    actor = AsyncWorker.remote()
    ref = actor.wait_forever.remote()
    time.sleep(1.5)
    orb.cancel(ref)
    with pytest.raises(TaskCancelledError):
        orb.get(ref, timeout=20)
    assert orb.get(actor.was_cancelled.remote(), timeout=20) is True

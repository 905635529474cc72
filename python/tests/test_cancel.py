"""orb.cancel (Ray's ray.cancel): queued tasks never run, running ones are interrupted
or killed, children go with their parent, actor calls as Ray treats them."""
import asyncio
import os
import signal
import time

import pytest

import orb
from orb.exceptions import TaskCancelledError


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


def test_a_queued_task_never_runs(cluster, scratch):
    # Both CPUs busy: the third task waits in the owner's queue.
    busy = [sleep_then_mark.remote(2, os.path.join(scratch, "busy%d" % i)) for i in range(2)]
    queued = sleep_then_mark.remote(0, os.path.join(scratch, "queued"))
    orb.cancel(queued)
    with pytest.raises(TaskCancelledError, match="cancelled before it ran"):
        orb.get(queued, timeout=10)
    assert orb.get(busy, timeout=30) == ["finished", "finished"]
    time.sleep(0.5)
    assert not os.path.exists(os.path.join(scratch, "queued"))


def test_a_running_task_gets_keyboard_interrupt_and_its_worker_goes_on(cluster, scratch):
    started = time.time()
    ref = interruptible.remote(os.path.join(scratch, "interrupted"))
    time.sleep(1.5)  # running, inside time.sleep
    orb.cancel(ref)
    with pytest.raises(TaskCancelledError, match="cancelled while it ran"):
        orb.get(ref, timeout=20)
    assert time.time() - started < 15
    assert wait_for_file(os.path.join(scratch, "interrupted"))
    # The same workers run later tasks undisturbed (no interrupt left over for them).
    assert orb.get([sleep_then_mark.remote(0.3, os.path.join(scratch, "after%d" % i)) for i in range(4)],
                   timeout=30) == ["finished"] * 4


def test_force_kills_the_worker(cluster, scratch):
    ref = sleep_then_mark.remote(30, os.path.join(scratch, "forced"))
    time.sleep(1.5)
    orb.cancel(ref, force=True)
    with pytest.raises(TaskCancelledError):
        orb.get(ref, timeout=20)
    time.sleep(1)
    assert not os.path.exists(os.path.join(scratch, "forced"))
    assert orb.get(pid.remote(), timeout=30) > 0  # a new worker serves on


@orb.remote
def parent(path):
    child = sleep_then_mark.remote(4, path)
    return orb.get(child)


def test_recursive_cancel_takes_the_children_too(cluster, scratch):
    child_mark = os.path.join(scratch, "child")
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


@orb.remote
def submits_and_returns(path):
    return [sleep_then_mark.remote(6, path)]  # the child's ref, owned by this task's worker


def test_a_borrowed_ref_is_cancelled_through_its_owner(cluster, scratch):
    mark = os.path.join(scratch, "borrowed")
    [child] = orb.get(submits_and_returns.remote(mark), timeout=30)
    with pytest.raises(orb.exceptions.GetTimeoutError):
        orb.get(child, timeout=1)
    orb.cancel(child)  # this driver borrows it: its owner cancels it
    with pytest.raises(TaskCancelledError):
        orb.get(child, timeout=20)
    time.sleep(6)
    assert not os.path.exists(mark), "the cancelled task ran to its end"


def test_only_task_results_can_be_cancelled(cluster):
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


@orb.remote
def waits_on_child(path):
    child = sleep_then_mark.remote(8, path)
    return orb.get(child)


def test_a_task_blocked_in_get_is_interrupted_by_a_cancel(cluster, scratch):
    ref = waits_on_child.remote(os.path.join(scratch, "child-of-blocked"))
    time.sleep(1.5)  # the parent is inside orb.get
    started = time.time()
    orb.cancel(ref, recursive=False)
    with pytest.raises(TaskCancelledError):
        orb.get(ref, timeout=30)
    assert time.time() - started < 5, "the cancel waited for the child the task was blocked on"


class Alarm(Exception):
    pass


def test_a_signal_handler_interrupts_a_blocking_get_in_the_driver(cluster, scratch):
    def on_alarm(signum, frame):
        raise Alarm()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        ref = sleep_then_mark.remote(10, os.path.join(scratch, "alarmed-get"))
        started = time.time()
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(Alarm):
            orb.get(ref)
        assert time.time() - started < 3
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(Alarm):
            orb.wait([ref], num_returns=1)
        orb.cancel(ref, force=True)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)



@orb.remote
def reports_its_cancel(started, verdict):
    try:
        open(started, "w").close()
        time.sleep(60)
    except KeyboardInterrupt:
        with open(verdict, "w") as f:
            f.write("cancelled" if orb.get_runtime_context().is_canceled() else "interrupted otherwise")
        raise
    return "finished"


def test_is_canceled_tells_an_interrupted_task_why(cluster, scratch):
    started, verdict = os.path.join(scratch, "started"), os.path.join(scratch, "verdict")
    ref = reports_its_cancel.remote(started, verdict)
    assert wait_for_file(started)
    orb.cancel(ref)
    with pytest.raises(TaskCancelledError):
        orb.get(ref, timeout=30)
    assert wait_for_file(verdict) and open(verdict).read() == "cancelled"
    assert not orb.get_runtime_context().is_canceled()  # the driver runs no cancelled task


@orb.remote
def never_ends():
    time.sleep(3600)


@orb.remote
def square(x):
    return x * x


@pytest.mark.parametrize("force", [False, True])
def test_a_task_waiting_for_its_arguments_is_cancelled_at_once(cluster, force):
    blocker = never_ends.remote()
    waiting = square.remote(blocker)
    started = time.time()
    orb.cancel(waiting, force=force)
    with pytest.raises(TaskCancelledError, match="while it waited for its arguments"):
        orb.get(waiting, timeout=20)
    assert time.time() - started < 10
    orb.cancel(blocker, force=True)

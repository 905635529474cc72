"""ObjectRefs in async code and async actors as Ray's: `await ref`, `ref.future()`,
`asyncio.gather(*refs)`; every method of an async actor on its one event loop."""
import asyncio
import os
import threading
import time

import pytest

import orb


@orb.remote
def square(x):
    return x * x


@orb.remote
def slow_square(x, seconds):
    time.sleep(seconds)
    return x * x


@orb.remote
def fails():
    raise KeyError("missing")


@orb.remote
class Signal:
    def __init__(self):
        self.event = asyncio.Event()

    def send(self):  # a sync method: on the actor's event loop, so the wait wakes
        self.event.set()
        return threading.current_thread().name

    async def wait(self):
        await self.event.wait()
        return "woken"


@orb.remote
class Sleeper:
    async def nap(self, seconds):
        await asyncio.sleep(seconds)
        return 1

    async def square_of(self, x):
        return await square.remote(x)  # a ref awaited inside an actor

    async def first_of(self, refs):
        return await refs[0]  # a borrowed ref (it came inside a list)

    async def threads(self):
        return len(os.listdir("/proc/self/task"))

    async def fail_after(self, seconds):
        await asyncio.sleep(seconds)
        raise ValueError("failed after %s s" % seconds)

    async def leave(self):
        await asyncio.sleep(0.1)
        orb.actor.exit_actor()


def test_await_a_ref_and_gather_many(cluster):
    async def main():
        one = await square.remote(7)
        many = await asyncio.gather(*[square.remote(i) for i in range(20)])
        return one, many

    one, many = asyncio.run(main())
    assert one == 49 and many == [i * i for i in range(20)]


def test_awaiting_does_not_block_the_event_loop(cluster):
    async def main():
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        ticker = asyncio.ensure_future(tick())
        value = await slow_square.remote(3, 1.0)
        ticker.cancel()
        return value, ticks

    value, ticks = asyncio.run(main())
    assert value == 9 and ticks >= 5


def test_future_and_errors(cluster):
    assert square.remote(5).future().result(timeout=30) == 25
    with pytest.raises(KeyError):
        fails.remote().future().result(timeout=30)

    async def await_failure():
        await fails.remote()

    with pytest.raises(KeyError, match="missing"):
        asyncio.run(await_failure())

    async def as_future_then_await_twice():
        # Ray's as_future(): an asyncio future; cancelling it leaves the ref awaitable.
        slow = slow_square.remote(4, 0.5)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(slow.as_future(), timeout=0.05)
        return await slow, await slow, await square.remote(6).as_future()

    assert asyncio.run(as_future_then_await_twice()) == (16, 16, 36)


def test_a_sync_method_of_an_async_actor_runs_on_its_event_loop(cluster):
    s = Signal.remote()
    waiting = s.wait.remote()
    time.sleep(0.3)
    assert orb.get(s.send.remote()) == "orb-asyncio"
    assert orb.get(waiting, timeout=10) == "woken"


def test_an_async_actor_runs_many_calls_at_once_and_awaits_refs(cluster):
    a = Sleeper.remote()
    started = time.time()
    assert sum(orb.get([a.nap.remote(1.0) for _ in range(200)], timeout=60)) == 200
    assert time.time() - started < 8, "200 one-second naps did not overlap"
    assert orb.get(a.square_of.remote(6)) == 36
    assert orb.get(a.first_of.remote([square.remote(4)])) == 16


def test_an_async_call_in_flight_holds_no_thread(cluster):
    # Each call's coroutine runs on the event loop, and the worker thread that took the
    # call goes on to the next: 300 calls in flight take a few dozen threads at most (a
    # thread per call in flight would be 300 more).
    a = Sleeper.remote()
    before = orb.get(a.threads.remote(), timeout=30)
    naps = [a.nap.remote(3.0) for _ in range(300)]
    failing = a.fail_after.remote(0.5)
    time.sleep(1.0)
    during = orb.get(a.threads.remote(), timeout=30)
    assert during < before + 100, (before, during)
    with pytest.raises(ValueError, match="failed after 0.5 s"):
        orb.get(failing, timeout=30)
    assert sum(orb.get(naps, timeout=60)) == 300
    # max_concurrency still bounds the calls in flight: two at a time, so four naps of
    # 0.5 s take about 1 s.
    two = Sleeper.options(max_concurrency=2).remote()
    orb.get(two.nap.remote(0), timeout=30)
    started = time.time()
    assert orb.get([two.nap.remote(0.5) for _ in range(4)], timeout=30) == [1] * 4
    assert 0.9 < time.time() - started < 5
    # Arguments the method cannot take fail the call as any other (a handle from
    # get_actor does not check them before sending).
    kept = Sleeper.options(name="sleeper-args").remote()  # noqa: F841 (a found handle does not keep it)
    with pytest.raises(TypeError):
        orb.get(orb.get_actor("sleeper-args").nap.remote(1, 2, 3), timeout=30)
    # exit_actor() in a deferred call ends the actor gracefully.
    with pytest.raises(orb.exceptions.ActorDiedError, match="INTENDED_USER_EXIT"):
        orb.get(two.leave.remote(), timeout=30)


def test_a_huge_max_concurrency_starts_and_serves(cluster):
    a = Sleeper.options(max_concurrency=100000).remote()
    assert orb.get(a.nap.remote(0), timeout=30) == 1


def test_quick_calls_sent_with_a_slow_one_are_not_held_behind_it(cluster):
    # Calls made before the actor is up travel to it in one batch: each result comes
    # back when its call ends, not when the batch's slowest does.
    s = Sleeper.remote()
    slow = s.nap.remote(8)
    quick = [s.square_of.remote(i) for i in range(5)]
    started = time.time()
    assert orb.get(quick, timeout=30) == [0, 1, 4, 9, 16]
    assert time.time() - started < 6, "the quick calls waited for the slow one"
    assert orb.get(slow, timeout=30) == 1


def test_a_completion_callback_that_raises_is_not_kept_alive(cluster):
    import sys

    def callback(result):
        raise RuntimeError("raised in a callback")

    ref = slow_square.remote(3, 0.5)
    before = sys.getrefcount(callback)
    ref._on_completed(callback)
    assert sys.getrefcount(callback) > before  # held while the runtime may call it
    assert orb.get(ref, timeout=30) == 9
    deadline = time.time() + 10
    while sys.getrefcount(callback) != before and time.time() < deadline:
        time.sleep(0.05)
    assert sys.getrefcount(callback) == before

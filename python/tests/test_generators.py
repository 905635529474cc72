"""Streaming generators (Ray's num_returns="streaming"): each item a remote generator
yields reaches its caller as an ObjectRef as soon as it is yielded."""
import asyncio
import os
import time

import numpy as np
import pytest

import orb


def wait_for_file(path, timeout=30):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > deadline:
            raise TimeoutError(path)
        time.sleep(0.02)


def read_count(path):
    try:
        with open(path) as f:
            return int(f.read() or 0)
    except FileNotFoundError:
        return 0


@orb.remote(num_returns="streaming")
def gated(gate):
    yield "first"
    wait_for_file(gate)  # only once the caller has read the first item
    yield "second"


@orb.remote(num_returns="streaming")
def count_to(n):
    for i in range(n):
        yield i


@orb.remote(num_returns="streaming")
def fails_after(n):
    for i in range(n):
        yield i
    raise ValueError("broke after %d items" % n)


@orb.remote(num_returns="streaming")
def counted(n, progress, pause=0.0):
    for i in range(n):
        with open(progress, "w") as f:
            f.write(str(i + 1))
        yield i
        time.sleep(pause)


@orb.remote(num_returns="streaming")
def arrays(n, size):
    for i in range(n):
        yield np.full(size, i, dtype=np.int32)


@orb.remote(num_returns="streaming")
def refs_inside():
    yield orb.put("inner")


@orb.remote(num_returns="streaming")
def not_a_generator():
    return 42


@orb.remote(num_returns="streaming", max_retries=2)
def dies_once(marker):
    for i in range(5):
        if i == 3 and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)  # the worker dies mid-stream: the task runs again
        yield i


class Flaky(Exception):
    pass


@orb.remote(max_retries=1, retry_exceptions=[Flaky])
def raises_once(marker):
    for i in range(4):
        if i == 2 and not os.path.exists(marker):
            open(marker, "w").close()
            raise Flaky("once")  # retried for it: the stream starts over
        yield i


@orb.remote
class Tokenizer:
    @orb.method(num_returns="streaming")
    def tokens(self, text):
        for word in text.split():
            yield word


@orb.remote
class AsyncStreamer:
    async def ticks(self, n):
        for i in range(n):
            await asyncio.sleep(0.001)
            yield i * 10

    async def task_names(self, n, fail_at=-1):
        """The name of the asyncio task each item is made in."""
        for i in range(n):
            if i == fail_at:
                raise ValueError("broke at %d" % i)
            await asyncio.sleep(0)
            yield asyncio.current_task().get_name()


def test_each_item_reaches_the_caller_while_the_generator_still_runs(cluster, scratch):
    gate = os.path.join(scratch, "gate")
    gen = gated.remote(gate)
    assert isinstance(gen, orb.ObjectRefGenerator)
    first = next(gen)
    assert isinstance(first, orb.ObjectRef)
    assert orb.get(first) == "first"  # the task is still waiting for the gate
    open(gate, "w").close()
    assert orb.get(next(gen)) == "second"
    with pytest.raises(StopIteration):
        next(gen)


def test_items_come_in_order_and_the_stream_ends(cluster):
    assert [orb.get(r) for r in count_to.remote(500)] == list(range(500))
    assert list(count_to.remote(0)) == []


def test_an_exception_is_raised_at_the_item_where_it_happened(cluster):
    refs = list(fails_after.remote(2))
    assert len(refs) == 3
    assert orb.get(refs[:2]) == [0, 1]
    with pytest.raises(ValueError, match="broke after 2 items"):
        orb.get(refs[2])


def test_backpressure_pauses_the_generator_until_its_reader_catches_up(cluster, scratch):
    progress = os.path.join(scratch, "progress")
    gen = counted.options(_generator_backpressure_num_objects=2).remote(10, progress)
    time.sleep(1.5)
    assert read_count(progress) <= 3, "the generator ran ahead of its unread items"
    assert [orb.get(r) for r in gen] == list(range(10))


def test_a_bound_of_one_pauses_in_the_yield_until_next_takes_the_item_and_wait_takes_nothing(cluster, scratch):
    # As Ray's: with a bound of 1 the generator stops in the yield that made item i
    # until next() takes it; orb.wait only looks.
    progress = os.path.join(scratch, "progress")
    gen = counted.options(_generator_backpressure_num_objects=1).remote(4, progress)
    for i in range(3):
        ready, _ = orb.wait([gen], timeout=30)
        assert ready == [gen]
        time.sleep(0.5)
        assert read_count(progress) == i + 1, "the generator ran past an item nobody took"
        assert orb.get(next(gen)) == i
    assert [orb.get(r) for r in gen] == [3]


def test_dropping_the_generator_releases_a_backpressured_producer_and_cancel_stops_one(cluster, scratch):
    # As Ray's: a generator whose reader went away runs on to its end (its items go at
    # once); orb.cancel is what stops one.
    progress = os.path.join(scratch, "progress")
    gen = counted.options(_generator_backpressure_num_objects=1).remote(20, progress)
    assert orb.get(next(gen)) == 0
    time.sleep(0.5)
    assert read_count(progress) <= 2  # held by the bound
    del gen
    deadline = time.time() + 30
    while read_count(progress) < 20 and time.time() < deadline:
        time.sleep(0.05)
    assert read_count(progress) == 20
    stopped = os.path.join(scratch, "stopped")
    gen = counted.remote(100000, stopped, 0.01)
    assert orb.get(next(gen)) == 0
    orb.cancel(gen)
    time.sleep(1.0)
    before = read_count(stopped)
    time.sleep(1.0)
    assert read_count(stopped) == before < 100000


def test_async_iteration(cluster):
    async def consume():
        return [orb.get(ref) async for ref in count_to.remote(20)]

    assert asyncio.run(consume()) == list(range(20))


def test_large_items_and_items_holding_refs(cluster):
    got = [orb.get(r) for r in arrays.remote(3, 300_000)]  # 1.2 MB each: in the object store
    assert [int(a[0]) for a in got] == [0, 1, 2] and all(a.shape == (300_000,) for a in got)
    inner = orb.get(next(refs_inside.remote()))
    assert orb.get(inner) == "inner"


def test_a_function_that_is_not_a_generator_is_a_clear_error(cluster):
    refs = list(not_a_generator.remote())
    assert len(refs) == 1
    with pytest.raises(TypeError, match="not a generator"):
        orb.get(refs[0])


def test_a_retried_generator_hands_no_duplicates(cluster, scratch):
    marker = os.path.join(scratch, "died")
    assert [orb.get(r) for r in dies_once.remote(marker)] == [0, 1, 2, 3, 4]
    assert os.path.exists(marker)
    raised = os.path.join(scratch, "raised")
    assert [orb.get(r) for r in raises_once.remote(raised)] == [0, 1, 2, 3]  # retry_exceptions too
    assert os.path.exists(raised)


def test_actor_methods_stream_sync_and_async(cluster):
    t = Tokenizer.remote()
    assert [orb.get(r) for r in t.tokens.remote("to be or not")] == ["to", "be", "or", "not"]
    assert [orb.get(r) for r in t.tokens.options(num_returns="streaming").remote("a b")] == ["a", "b"]
    s = AsyncStreamer.remote()
    assert [orb.get(r) for r in s.ticks.remote(5)] == [0, 10, 20, 30, 40]  # a generator method streams


def test_an_async_generator_method_runs_in_one_asyncio_task_and_fails_at_its_item(cluster):
    s = AsyncStreamer.remote()
    names = [orb.get(r) for r in s.task_names.remote(5)]
    assert len(names) == 5 and len(set(names)) == 1  # as Ray's: one task throughout
    refs = list(s.task_names.options(_generator_backpressure_num_objects=1).remote(4, fail_at=2))
    assert len(refs) == 3
    with pytest.raises(ValueError, match="broke at 2"):
        orb.get(refs[2])
    assert [orb.get(r) for r in s.ticks.remote(3)] == [0, 10, 20]  # the actor goes on


def test_is_finished_and_next_ready_say_what_next_would_do(cluster, scratch):
    gate = os.path.join(scratch, "gate")
    gen = gated.remote(gate)
    assert orb.get(gen) is gen  # as Ray's: a generator is its own value
    assert orb.get(next(gen), timeout=30) == "first"
    assert not gen.next_ready() and not gen.is_finished()  # the second waits for the gate
    open(gate, "w").close()
    orb.wait([gen.completed()], timeout=30)
    assert gen.next_ready() and not gen.is_finished()
    next(gen)
    assert gen.is_finished() and not gen.next_ready()
    failing = fails_after.remote(1)
    orb.wait([failing.completed()], timeout=30)
    next(failing)
    assert failing.next_ready() and not failing.is_finished()  # its error is still to take
    next(failing)
    assert failing.is_finished() and not failing.next_ready()


def test_a_generator_function_streams_without_being_told(cluster):
    @orb.remote
    def squares(n):
        for i in range(n):
            yield i * i

    assert [orb.get(r) for r in squares.remote(4)] == [0, 1, 4, 9]
    assert orb.get(squares.options(num_returns=1).remote(2)) == 0  # one return: its first item, as Ray's


def test_a_generator_cannot_leave_its_process(cluster):
    @orb.remote
    def take(g):
        return g

    with pytest.raises(TypeError, match="ObjectRefGenerator"):
        take.remote(count_to.remote(1))


def test_cancelling_a_generator_ends_its_stream_with_task_cancelled(cluster, scratch):
    progress = os.path.join(scratch, "progress")
    gen = counted.remote(1000, progress, 0.01)
    assert orb.get(next(gen)) == 0
    orb.cancel(gen)
    refs = list(gen)  # what was yielded before the cancel, then the cancellation
    with pytest.raises(orb.exceptions.TaskCancelledError):
        orb.get(refs[-1])
    assert read_count(progress) < 1000


@orb.remote(_actor_generator_backpressure_num_objects=2)
class Producer:
    def produce(self, n, progress):
        for i in range(n):
            with open(progress, "w") as f:
                f.write(str(i + 1))
            yield i


def test_an_actor_wide_backpressure_bound_holds_its_generator_methods(cluster, scratch):
    with pytest.raises(ValueError, match="_actor_generator_backpressure_num_objects must be > 0"):
        orb.remote(_actor_generator_backpressure_num_objects=0)(Producer._cls)
    progress = os.path.join(scratch, "progress")
    gen = Producer.remote().produce.remote(10, progress)
    time.sleep(1.5)
    assert read_count(progress) <= 3, "the actor's generator ran ahead of its unread items"
    assert [orb.get(r) for r in gen] == list(range(10))


def test_wait_takes_generators_ready_when_their_next_item_is(cluster, scratch):
    gate = os.path.join(scratch, "gate")
    gen = gated.remote(gate)
    plain = orb.put("value")
    ready, not_ready = orb.wait([gen, plain], num_returns=2, timeout=30)
    assert ready == [gen, plain] and not_ready == []
    assert orb.get(next(gen)) == "first"  # what wait saw is what next() gives
    ready, not_ready = orb.wait([gen], timeout=0.5)  # the second item waits for the gate
    assert ready == [] and not_ready == [gen]
    open(gate, "w").close()
    ready, _ = orb.wait([gen], timeout=30)
    assert ready == [gen] and orb.get(next(gen)) == "second"
    ready, _ = orb.wait([gen], timeout=30)  # the end counts as ready, as in Ray
    assert ready == [gen]
    with pytest.raises(StopIteration):
        next(gen)
    with pytest.raises(TypeError, match="ObjectRefs and ObjectRefGenerators"):
        orb.wait([1])


def test_items_peeked_ahead_resolve_when_made_or_to_how_the_stream_ended(cluster, scratch):
    gate = os.path.join(scratch, "gate")
    gen = gated.remote(gate)
    first, second, past_end = gen._get_next_ref_n(3)  # Ray's private peek: nothing taken
    assert orb.get(first, timeout=30) == "first"
    ready, _ = orb.wait([second], timeout=0.5)
    assert not ready  # not yielded yet
    open(gate, "w").close()
    assert orb.get(second, timeout=30) == "second"
    with pytest.raises(orb.exceptions.ObjectRefStreamEndOfStreamError):
        orb.get(past_end, timeout=30)
    assert gen._consume_next_ref_n(1) == [first]  # the same items, taken once
    assert next(gen) == second
    with pytest.raises(StopIteration):
        next(gen)
    failing = fails_after.remote(1)
    zero, failed = failing._get_next_ref_n(2)
    assert orb.get(zero, timeout=30) == 0
    with pytest.raises(ValueError, match="broke after 1 items"):
        orb.get(failed, timeout=30)

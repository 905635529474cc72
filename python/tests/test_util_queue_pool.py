"""orb.util.queue.Queue and orb.util.multiprocessing.Pool, as Ray's: a queue that tasks,
actors and the driver share; multiprocessing.Pool's API over actors."""
import asyncio
import os
import queue
import time

import pytest

import orb
from orb.util.multiprocessing import Pool
from orb.util.queue import Empty, Full, Queue


@orb.remote
def produce(q, n):
    for i in range(n):
        q.put(i)
    return n


@orb.remote
class Consumer:
    def take(self, q, n):
        return [q.get(timeout=30) for _ in range(n)]


def test_a_queue_shared_by_a_task_an_actor_and_the_driver(cluster):
    q = Queue()
    assert q.empty() and q.qsize() == 0 and len(q) == 0
    assert orb.get(produce.remote(q, 5)) == 5
    assert q.qsize() == 5
    assert orb.get(Consumer.remote().take.remote(q, 3)) == [0, 1, 2]  # first in, first out
    assert [q.get(), q.get_nowait()] == [3, 4]
    with pytest.raises(Empty):
        q.get_nowait()
    started = time.time()
    with pytest.raises(queue.Empty):  # the standard library's, as Ray's
        q.get(timeout=0.3)
    assert time.time() - started >= 0.25


def test_a_bounded_queue_refuses_what_does_not_fit(cluster):
    q = Queue(maxsize=2)
    q.put_nowait_batch(["a", "b"])
    assert q.full()
    with pytest.raises(Full):
        q.put_nowait("c")
    with pytest.raises(queue.Full):
        q.put("c", timeout=0.2)
    with pytest.raises(Empty):
        q.get_nowait_batch(3)  # fewer there: none taken
    assert q.get_nowait_batch(2) == ["a", "b"]
    ref = orb.put("payload")
    q.put(ref)  # a ref stays a ref
    assert orb.get(q.get()) == "payload"
    q.shutdown()


def test_async_put_and_get(cluster):
    q = Queue()

    async def main():
        await q.put_async("x")
        return await q.get_async(timeout=10)

    assert asyncio.run(main()) == "x"


_initialized = None


def _init(value):
    global _initialized
    _initialized = value


def _square(x):
    return x * x


def _add(a, b):
    return a + b


def _initialized_value(_):
    return _initialized, os.getpid()


def _fail(x):
    raise ValueError("bad %d" % x)


def test_pool_maps_applies_and_runs_the_initializer_in_each_process(cluster):
    with Pool(processes=2, initializer=_init, initargs=("ready",)) as pool:
        assert pool.map(_square, range(10)) == [x * x for x in range(10)]
        assert pool.starmap(_add, [(1, 2), (3, 4)]) == [3, 7]
        assert list(pool.imap(_square, range(5))) == [0, 1, 4, 9, 16]
        assert sorted(pool.imap_unordered(_square, range(5))) == [0, 1, 4, 9, 16]
        assert pool.apply(_add, (2, 3)) == 5
        result = pool.apply_async(_square, (7,))
        assert result.get(timeout=30) == 49 and result.ready() and result.successful()
        seen = pool.map(_initialized_value, range(8), chunksize=1)
        assert {value for value, _ in seen} == {"ready"}
        assert len({pid for _, pid in seen}) == 2
        with pytest.raises(ValueError, match="bad 3"):
            pool.map(_fail, [3])
        pool.close()
        pool.join()
        with pytest.raises(ValueError, match="Pool not running"):
            pool.map(_square, [1])


def test_pool_replaces_a_process_after_maxtasksperchild_pieces_of_work(cluster):
    with Pool(processes=1, initializer=_init, initargs=("fresh",), maxtasksperchild=2) as pool:
        seen = pool.map(_initialized_value, range(6), chunksize=1)
        pids = [pid for _, pid in seen]
        # Three processes in turn, two pieces each, each initialized.
        assert len(set(pids)) == 3 and pids[0] == pids[1] and pids[2] == pids[3] and pids[4] == pids[5], pids
        assert {value for value, _ in seen} == {"fresh"}
    with pytest.raises(ValueError, match="maxtasksperchild must be an int >= 1"):
        Pool(processes=1, maxtasksperchild=0)

"""Queue (Ray's ray.util.queue.Queue): a first-in first-out queue that tasks, actors and
the driver share, kept by an async actor of its own.

    q = Queue(maxsize=100)
    q.put(item); q.get(timeout=5); q.put_nowait_batch(items); q.get_nowait_batch(3)
    q.qsize(), q.empty(), q.full(); await q.put_async(item); await q.get_async()

A handle pickles: pass the queue to tasks and actors. Empty and Full are the standard
library's queue.Empty and queue.Full (subclasses), raised where Ray raises them.
"""
import asyncio
import queue as _stdlib_queue

import orb


class Empty(_stdlib_queue.Empty):
    pass


class Full(_stdlib_queue.Full):
    pass


@orb.remote(num_cpus=0)
class _QueueActor:
    def __init__(self, maxsize):
        self.maxsize = maxsize
        self.queue = asyncio.Queue(maxsize)

    async def qsize(self):
        return self.queue.qsize()

    async def put(self, item, timeout=None):
        """False when the queue stayed full for `timeout` seconds."""
        try:
            await asyncio.wait_for(self.queue.put(item), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def get(self, timeout=None):
        """(True, item), or (False, None) when the queue stayed empty for `timeout` seconds."""
        try:
            return True, await asyncio.wait_for(self.queue.get(), timeout)
        except asyncio.TimeoutError:
            return False, None

    async def put_nowait_batch(self, items):
        if self.maxsize > 0 and len(items) + self.queue.qsize() > self.maxsize:
            return False
        for item in items:
            self.queue.put_nowait(item)
        return True

    async def get_nowait_batch(self, num_items):
        if num_items > self.queue.qsize():
            return None
        return [self.queue.get_nowait() for _ in range(num_items)]


class Queue:
    def __init__(self, maxsize=0, actor_options=None):
        if isinstance(maxsize, bool) or not isinstance(maxsize, int):
            raise TypeError("maxsize must be an int, not %r" % (maxsize,))
        self.maxsize = maxsize
        self.actor = _QueueActor.options(**(actor_options or {})).remote(maxsize)

    def __len__(self):
        return self.size()

    def size(self):
        return orb.get(self.actor.qsize.remote())

    qsize = size

    def empty(self):
        return self.size() == 0

    def full(self):
        return self.maxsize > 0 and self.size() >= self.maxsize

    def put(self, item, block=True, timeout=None):
        """Adds `item`, waiting up to `timeout` seconds (None: as long as it takes) while
        the queue is full; Full when it stays full, or at once when not `block`."""
        if not block:
            return self.put_nowait(item)
        _check_timeout(timeout)
        if not orb.get(self.actor.put.remote(_Item(item), timeout)):
            raise Full("the queue stayed full for %s s" % timeout)

    async def put_async(self, item, block=True, timeout=None):
        if not block:
            return self.put_nowait(item)
        _check_timeout(timeout)
        if not await self.actor.put.remote(_Item(item), timeout):
            raise Full("the queue stayed full for %s s" % timeout)

    def get(self, block=True, timeout=None):
        """The oldest item, waiting up to `timeout` seconds (None: as long as it takes)
        while the queue is empty; Empty when it stays empty, or at once when not `block`."""
        if not block:
            return self.get_nowait()
        _check_timeout(timeout)
        ok, item = orb.get(self.actor.get.remote(timeout))
        if not ok:
            raise Empty("the queue stayed empty for %s s" % timeout)
        return item.value

    async def get_async(self, block=True, timeout=None):
        if not block:
            return self.get_nowait()
        _check_timeout(timeout)
        ok, item = await self.actor.get.remote(timeout)
        if not ok:
            raise Empty("the queue stayed empty for %s s" % timeout)
        return item.value

    def put_nowait(self, item):
        self.put_nowait_batch([item])

    def put_nowait_batch(self, items):
        """Adds all of `items` at once, or none (Full) when they do not fit."""
        if not orb.get(self.actor.put_nowait_batch.remote([_Item(i) for i in items])):
            raise Full("%d item(s) do not fit in the queue (maxsize %d)" % (len(items), self.maxsize))

    def get_nowait(self):
        return self.get_nowait_batch(1)[0]

    def get_nowait_batch(self, num_items):
        """The `num_items` oldest items, or Empty (and none taken) when there are fewer."""
        if isinstance(num_items, bool) or not isinstance(num_items, int) or num_items < 0:
            raise ValueError("num_items must be an int >= 0, not %r" % (num_items,))
        got = orb.get(self.actor.get_nowait_batch.remote(num_items))
        if got is None:
            raise Empty("fewer than %d item(s) in the queue" % num_items)
        return [i.value for i in got]

    def shutdown(self, force=False, grace_period_s=5):
        """Ends the queue's actor (its items go with it)."""
        if self.actor is not None:
            orb.kill(self.actor)
        self.actor = None


class _Item:
    """An item as it travels: a top-level ObjectRef stays a ref (not its value)."""

    def __init__(self, value):
        self.value = value


def _check_timeout(timeout):
    if timeout is not None and timeout < 0:
        raise ValueError("timeout must be a non-negative number or None, not %r" % (timeout,))

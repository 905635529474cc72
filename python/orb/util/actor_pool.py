"""ActorPool (Ray's ray.util.ActorPool): work spread over a fixed set of actors.

    pool = ActorPool([Worker.remote() for _ in range(4)])
    results = list(pool.map(lambda actor, v: actor.work.remote(v), values))  # in order
    results = list(pool.map_unordered(lambda actor, v: actor.work.remote(v), values))
    pool.has_free(), pool.pop_idle(), pool.push(actor)  # grow and shrink it, as Ray's

`fn(actor, value)` returns a ref, or a list of refs (a method with num_returns > 1);
a result is then the list of their values. A timed-out result taken with
`ignore_if_timedout=True` is dropped and its actor goes back to the pool, as Ray's.
"""
import orb

_TIMED_OUT = "Timed out waiting for result"


def _key(future):
    """A submission's dict key: a ref, or the tuple of a method's refs."""
    return tuple(future) if isinstance(future, list) else future


def _first_ref(key):
    return key[0] if isinstance(key, tuple) else key


class ActorPool:
    def __init__(self, actors):
        self._idle_actors = list(actors)
        self._future_to_actor = {}  # key -> (submission index, actor)
        self._index_to_future = {}  # submission index -> ref or list of refs
        self._next_task_index = 0
        self._next_return_index = 0
        self._pending_submits = []  # (fn, value) waiting for an idle actor

    def submit(self, fn, value):
        """Runs fn(actor, value) on an idle actor, or once one is idle."""
        if not self._idle_actors:
            self._pending_submits.append((fn, value))
            return
        actor = self._idle_actors.pop()
        future = fn(actor, value)
        self._future_to_actor[_key(future)] = (self._next_task_index, actor)
        self._index_to_future[self._next_task_index] = future
        self._next_task_index += 1

    def _return_actor(self, actor):
        self._idle_actors.append(actor)
        if self._pending_submits:
            self.submit(*self._pending_submits.pop(0))

    def has_next(self):
        """Whether a submitted result has not been taken yet."""
        return bool(self._future_to_actor)

    def get_next(self, timeout=None, ignore_if_timedout=False):
        """The next result in submission order. On a timeout: TimeoutError; with
        `ignore_if_timedout`, that submission is dropped first (its actor freed)."""
        if not self.has_next():
            raise StopIteration("No more results to get")
        if self._next_return_index >= self._next_task_index:
            raise ValueError("It is not allowed to call get_next() after get_next_unordered().")
        future = self._index_to_future[self._next_return_index]
        timed_out = False
        if timeout is not None:
            ready, _ = orb.wait([_first_ref(_key(future))], timeout=timeout)
            if not ready:
                if not ignore_if_timedout:
                    raise TimeoutError(_TIMED_OUT)
                timed_out = True
        del self._index_to_future[self._next_return_index]
        self._next_return_index += 1
        _, actor = self._future_to_actor.pop(_key(future))
        self._return_actor(actor)
        if timed_out:
            raise TimeoutError("%s. The task %s has been ignored." % (_TIMED_OUT, future))
        return orb.get(future)

    def get_next_unordered(self, timeout=None, ignore_if_timedout=False):
        """The next result to finish. On a timeout: TimeoutError, or None with
        `ignore_if_timedout` (the work stays in the pool)."""
        if not self.has_next():
            raise StopIteration("No more results to get")
        by_first = {_first_ref(key): key for key in self._future_to_actor}
        ready, _ = orb.wait(list(by_first), num_returns=1, timeout=timeout)
        if not ready:
            if ignore_if_timedout:
                return None
            raise TimeoutError(_TIMED_OUT)
        key = by_first[ready[0]]
        index, actor = self._future_to_actor.pop(key)
        future = self._index_to_future.pop(index)
        self._next_return_index = max(self._next_return_index, index + 1)
        self._return_actor(actor)
        return orb.get(future)

    def has_free(self):
        """Whether an actor is idle and no submission waits for one."""
        return bool(self._idle_actors) and not self._pending_submits

    def pop_idle(self):
        """Takes an idle actor out of the pool; None when none is idle."""
        return self._idle_actors.pop() if self.has_free() else None

    def push(self, actor):
        """Adds an actor to the pool; a waiting submission starts on it."""
        busy = [a for _, a in self._future_to_actor.values()]
        if actor in self._idle_actors or actor in busy:
            raise ValueError("Actor already belongs to current ActorPool")
        self._return_actor(actor)

    def _drop_earlier_results(self):
        # As Ray's map: results submitted before it are taken if ready, else dropped.
        while self.has_next():
            try:
                self.get_next(timeout=0, ignore_if_timedout=True)
            except TimeoutError:
                pass

    def map(self, fn, values):
        """Submits fn(actor, v) for every value now; yields the results in order."""
        self._drop_earlier_results()
        for v in values:
            self.submit(fn, v)

        def results():
            while self.has_next():
                yield self.get_next()
        return results()

    def map_unordered(self, fn, values):
        """Submits fn(actor, v) for every value now; yields the results as they finish."""
        self._drop_earlier_results()
        for v in values:
            self.submit(fn, v)

        def results():
            while self.has_next():
                yield self.get_next_unordered()
        return results()

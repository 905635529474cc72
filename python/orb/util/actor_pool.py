"""ActorPool (Ray's ray.util.ActorPool): work spread over a fixed set of actors.

    pool = ActorPool([Worker.remote() for _ in range(4)])
    results = list(pool.map(lambda actor, v: actor.work.remote(v), values))  # in order
    results = list(pool.map_unordered(lambda actor, v: actor.work.remote(v), values))
    pool.has_free(), pool.pop_idle(), pool.push(actor)  # grow and shrink it, as Ray's
"""
import orb


class ActorPool:
    def __init__(self, actors):
        self._idle = list(actors)
        if not self._idle:
            raise ValueError("ActorPool needs at least one actor")
        self._busy = {}     # ref -> (actor, submission index)
        self._pending = []  # (fn, value) waiting for an idle actor
        self._next_index = 0
        self._next_to_return = 0
        self._done = {}     # submission index -> ref, finished out of order

    def submit(self, fn, value):
        """Runs fn(actor, value) on an idle actor (or once one is idle)."""
        if self._idle:
            actor = self._idle.pop()
            self._busy[fn(actor, value)] = (actor, self._next_index)
            self._next_index += 1
        else:
            self._pending.append((fn, value))

    def has_next(self):
        return bool(self._busy or self._pending or self._done)

    def _finish_one(self, timeout=None):
        ready, _ = orb.wait(list(self._busy), num_returns=1, timeout=timeout)
        if not ready:
            raise TimeoutError("no result within the timeout")
        ref = ready[0]
        actor, index = self._busy.pop(ref)
        self._idle.append(actor)
        if self._pending:
            self.submit(*self._pending.pop(0))
        return ref, index

    def get_next(self, timeout=None):
        """The next result in submission order."""
        if not self.has_next():
            raise StopIteration("no more results")
        while self._next_to_return not in self._done:
            ref, index = self._finish_one(timeout)
            self._done[index] = ref
        ref = self._done.pop(self._next_to_return)
        self._next_to_return += 1
        return orb.get(ref)

    def get_next_unordered(self, timeout=None):
        """The next result to finish."""
        if self._done:
            index = min(self._done)
            ref = self._done.pop(index)
        else:
            if not self.has_next():
                raise StopIteration("no more results")
            ref, _ = self._finish_one(timeout)
        return orb.get(ref)

    def has_free(self):
        """Whether an actor is idle and no submission waits for one (Ray's has_free)."""
        return bool(self._idle) and not self._pending

    def pop_idle(self):
        """Takes an idle actor out of the pool (None when none is idle), as Ray's pop_idle."""
        return self._idle.pop() if self.has_free() else None

    def push(self, actor):
        """Adds an actor to the pool (Ray's push); a waiting submission starts on it."""
        if actor in self._idle or any(a == actor for a, _ in self._busy.values()):
            raise ValueError("actor %r is already in the pool" % (actor,))
        self._idle.append(actor)
        if self._pending:
            self.submit(*self._pending.pop(0))

    def map(self, fn, values):
        for v in values:
            self.submit(fn, v)
        while self.has_next():
            yield self.get_next()

    def map_unordered(self, fn, values):
        for v in values:
            self.submit(fn, v)
        while self.has_next():
            yield self.get_next_unordered()

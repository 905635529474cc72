"""A multiprocessing.Pool whose processes are actors (one CPU each): each runs the
initializer once, then the chunks of work sent to it. Results come back in order
(map, imap, starmap) or as they finish (imap_unordered); a function that raises makes
the call raise its error where the result is read, as the standard library does."""
import itertools
import multiprocessing

import orb

TimeoutError = multiprocessing.TimeoutError


@orb.remote(num_cpus=1)
class _PoolProcess:
    def __init__(self, initializer, initargs):
        if initializer is not None:
            initializer(*initargs)

    def run(self, function, chunk, star):
        return [function(*args) if star else function(args) for args in chunk]

    def apply(self, function, args, kwargs):
        return function(*args, **kwargs)


class AsyncResult:
    """multiprocessing's AsyncResult over refs: get(timeout), wait(timeout), ready(), successful()."""

    def __init__(self, refs, single=False, callback=None, error_callback=None):
        self._refs = refs
        self._single = single
        self._callback = callback
        self._error_callback = error_callback
        self._value = None
        self._error = None
        self._done = False

    def _finish(self, timeout):
        if self._done:
            return
        ready, _ = orb.wait(self._refs, num_returns=len(self._refs), timeout=timeout)
        if len(ready) < len(self._refs):
            raise TimeoutError("the result was not ready within %s s" % timeout)
        try:
            chunks = orb.get(self._refs)
            self._value = chunks[0] if self._single else [v for chunk in chunks for v in chunk]
        except Exception as e:
            self._error = e
        self._done = True
        if self._error is None and self._callback:
            self._callback(self._value)
        if self._error is not None and self._error_callback:
            self._error_callback(self._error)

    def get(self, timeout=None):
        self._finish(timeout)
        if self._error is not None:
            raise self._error
        return self._value

    def wait(self, timeout=None):
        try:
            self._finish(timeout)
        except TimeoutError:
            pass

    def ready(self):
        if self._done:
            return True
        ready, _ = orb.wait(self._refs, num_returns=len(self._refs), timeout=0)
        return len(ready) == len(self._refs)

    def successful(self):
        if not self.ready():
            raise ValueError("the result is not ready")
        self._finish(None)
        return self._error is None


class Pool:
    def __init__(self, processes=None, initializer=None, initargs=None, maxtasksperchild=None, context=None,
                 ray_address=None, ray_remote_args=None):
        if not orb.is_initialized():
            orb.init(address=ray_address)
        if processes is None:
            processes = max(1, int(orb.cluster_resources().get("CPU", 1)))
        if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
            raise ValueError("processes must be an int >= 1, not %r" % (processes,))
        if maxtasksperchild is not None and (isinstance(maxtasksperchild, bool) or
                                             not isinstance(maxtasksperchild, int) or maxtasksperchild < 1):
            raise ValueError("maxtasksperchild must be an int >= 1 or None, not %r" % (maxtasksperchild,))
        self._process_class = _PoolProcess.options(**ray_remote_args) if ray_remote_args else _PoolProcess
        self._initializer = (initializer, tuple(initargs or ()))
        self._actors = [self._process_class.remote(*self._initializer) for _ in range(processes)]
        self._max_tasks = maxtasksperchild
        self._tasks = [0] * processes  # sent to each process so far
        self._next = itertools.count()
        self._closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.terminate()

    def _actor(self):
        """The process for the next piece of work. One that was sent maxtasksperchild
        pieces is replaced by a fresh one; its handle dropped, it ends once its work is done."""
        if self._actors is None:
            raise ValueError("Pool not running")
        i = next(self._next) % len(self._actors)
        if self._max_tasks is not None:
            if self._tasks[i] >= self._max_tasks:
                self._actors[i] = self._process_class.remote(*self._initializer)
                self._tasks[i] = 0
            self._tasks[i] += 1
        return self._actors[i]

    def _check_open(self):
        if self._closed or self._actors is None:
            raise ValueError("Pool not running")

    def _chunks(self, function, iterable, chunksize, star):
        items = list(iterable)
        if not chunksize:
            chunksize = max(1, len(items) // (len(self._actors) * 4) + (len(items) % (len(self._actors) * 4) > 0))
        return [self._actor().run.remote(function, items[i:i + chunksize], star)
                for i in range(0, len(items), chunksize)]

    def apply(self, func, args=(), kwds=None):
        return self.apply_async(func, args, kwds).get()

    def apply_async(self, func, args=(), kwds=None, callback=None, error_callback=None):
        self._check_open()
        ref = self._actor().apply.remote(func, tuple(args), dict(kwds or {}))
        return AsyncResult([ref], single=True, callback=callback, error_callback=error_callback)

    def map(self, func, iterable, chunksize=None):
        return self.map_async(func, iterable, chunksize).get()

    def map_async(self, func, iterable, chunksize=None, callback=None, error_callback=None):
        return self._map_async(func, iterable, chunksize, False, callback, error_callback)

    def starmap(self, func, iterable, chunksize=None):
        return self.starmap_async(func, iterable, chunksize).get()

    def starmap_async(self, func, iterable, chunksize=None, callback=None, error_callback=None):
        return self._map_async(func, iterable, chunksize, True, callback, error_callback)

    def _map_async(self, func, iterable, chunksize, star, callback, error_callback):
        self._check_open()
        return AsyncResult(self._chunks(func, iterable, chunksize, star), callback=callback,
                           error_callback=error_callback)

    def imap(self, func, iterable, chunksize=1):
        self._check_open()
        for ref in self._chunks(func, iterable, chunksize, False):
            yield from orb.get(ref)

    def imap_unordered(self, func, iterable, chunksize=1):
        self._check_open()
        pending = self._chunks(func, iterable, chunksize, False)
        while pending:
            ready, pending = orb.wait(pending, num_returns=1)
            yield from orb.get(ready[0])

    def close(self):
        """No more work may be submitted; join() then waits for what was."""
        self._closed = True

    def join(self):
        if not self._closed:
            raise ValueError("call close() or terminate() before join()")
        if self._actors:
            orb.get([a.apply.remote(_nothing, (), {}) for a in self._actors])

    def terminate(self):
        """Ends the processes now."""
        self._closed = True
        for actor in self._actors or []:
            orb.kill(actor)
        self._actors = None


def _nothing():
    return None

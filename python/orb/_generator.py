"""Ray's ObjectRefGenerator: what `.remote()` of a streaming generator task or actor
method (num_returns="streaming") returns. Iterating it gives an ObjectRef per item the
generator yields, as soon as it is yielded (not when the task ends); `for ref in gen`
or `async for ref in gen`. If the generator raises, the item where it happened is a ref
whose `orb.get` raises that error; the iteration then ends."""
import asyncio

from orb import _core


class ObjectRefGenerator:
    def __init__(self, task_ref):
        self._task_ref = task_ref  # the task's own result: its item count, or its error
        self._ended = False
        self._taken = 0  # items taken by next()

    def __iter__(self):
        return self

    def __next__(self):
        return self._next(-1)

    def _ready(self, timeout_ms=0):
        """Whether the next item, or the end, is here within `timeout_ms` (orb.wait's
        question). Takes nothing: an item counts as read (for backpressure) only once
        `next()` takes it, as in Ray."""
        if self._ended:
            return True
        return _core.generator_item_ready(self._task_ref, timeout_ms)

    def _next(self, timeout_ms):
        if self._ended:
            raise StopIteration
        ref = _core.next_generator_item(self._task_ref, timeout_ms)
        if ref is not None:
            self._taken += 1
            return ref
        self._ended = True
        if self._failed():
            return self._task_ref  # the error, at the item where it happened
        raise StopIteration

    def _get_next_ref_n(self, n):
        """Ray's: the refs of the next `n` items, taking none of them. An item not made
        yet is its ref once it is; if the task ends first, getting it raises the task's
        error, or ObjectRefStreamEndOfStreamError when it ended well."""
        return _core.peek_generator_items(self._task_ref, n)

    def _consume_next_ref_n(self, n):
        """Ray's: takes the next `n` items (as `next()` would), waiting for each; stops
        at the end of the stream. The refs taken (so they count as read)."""
        taken = []
        for _ in range(n):
            if self._ended:
                break
            ref = _core.next_generator_item(self._task_ref, -1)
            if ref is None:
                self._ended = True
                break
            taken.append(ref)
        self._taken += len(taken)
        return taken

    def next_ready(self):
        """Ray's: whether next() would return at once (an item, or the error where the
        generator failed); False when it would wait, or raise StopIteration."""
        return not self.is_finished() and self._ready(0)

    def is_finished(self):
        """Ray's: whether the task ended and every item (and its error, if it failed)
        was taken: next() would raise StopIteration."""
        if self._ended:
            return True
        if not _core.generator_item_ready(self._task_ref, 0):
            return False
        from orb import get, wait
        if not wait([self._task_ref], timeout=0)[0]:
            return False  # an item is here, the end is not
        try:
            return get(self._task_ref) == self._taken
        except Exception:
            return False  # its error is not taken yet

    def _failed(self):
        from orb import get
        try:
            get(self._task_ref)
        except Exception:
            return True
        return False

    def __aiter__(self):
        return self

    async def __anext__(self):
        # The wait runs on a thread of the loop's executor: the loop goes on meanwhile.
        ref = await asyncio.get_running_loop().run_in_executor(None, self._next_or_none)
        if ref is None:
            raise StopAsyncIteration
        return ref

    def _next_or_none(self):
        try:
            return self._next(-1)
        except StopIteration:
            return None

    def completed(self):
        """A ref ready when the task has ended (its value: the number of items)."""
        return self._task_ref

    def __del__(self):
        try:
            _core.drop_generator(self._task_ref)
        except Exception:
            pass  # the runtime is gone already

    def __reduce__(self):
        raise TypeError("an ObjectRefGenerator cannot be passed to other processes: only its submitter reads it")

    def __repr__(self):
        return "ObjectRefGenerator(%s)" % self._task_ref.hex()


class DynamicObjectRefGenerator:
    """What `orb.get` of a num_returns="dynamic" call's ref gives (Ray's name): the refs
    of the items its generator yielded, in order; `len()` and iteration. An error the
    generator raised is the last ref (its `orb.get` raises it). The items belong to the
    worker that ran the generator (in Ray, to the caller)."""

    def __init__(self, refs):
        self._refs = list(refs)

    def __iter__(self):
        return iter(self._refs)

    def __len__(self):
        return len(self._refs)

    def __repr__(self):
        return "DynamicObjectRefGenerator(%d refs)" % len(self._refs)

"""Watch events: a bounded history to resume from, and the open subscriptions fed from it."""

import collections
import copy
import queue
import threading

from .errors import expired


class Event:
    """One change of one object; `old` is the object before a MODIFIED."""

    __slots__ = ("type", "resource", "obj", "old", "rv")

    def __init__(self, type_, resource, obj, old, rv):
        self.type, self.resource, self.obj, self.old, self.rv = type_, resource, obj, old, rv


class Subscription:
    """One watcher's view: events for one resource, in one namespace (or all), through a filter.

    An object that stops matching the filter is reported DELETED, one that starts matching ADDED,
    as the API server's watch cache does.
    """

    def __init__(self, resource, namespace, obj_filter):
        self.resource, self.namespace, self.filter = resource, namespace, obj_filter
        self._queue = queue.Queue()
        self.dropped = False
        self.initial_count = 0   # ADDED events queued for the objects there when the watch began
        self.start_rv = 0

    def _visible(self, obj):
        if obj is None:
            return False
        if self.namespace and obj.get("metadata", {}).get("namespace") != self.namespace:
            return False
        return self.filter is None or self.filter.matches(obj)

    def offer(self, event):
        if event.resource != self.resource:
            return
        now = self._visible(event.obj)
        if event.type == "MODIFIED":
            before = self._visible(event.old)
            kind = {(True, True): "MODIFIED", (False, True): "ADDED", (True, False): "DELETED"}.get((before, now))
        else:
            kind = event.type if now else None
        if kind:
            self._queue.put((kind, event.obj))

    def put_initial(self, obj):
        if self._visible(obj):
            self.initial_count += 1
            self._queue.put(("ADDED", copy.deepcopy(obj)))

    def idle(self):
        return self._queue.empty()

    def next(self, timeout):
        """(type, object), or None when nothing came within timeout or the watch was dropped."""
        if self.dropped:
            return None
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def drop(self):
        self.dropped = True
        self._queue.put(None)


class WatchHub:
    """Keeps the last `capacity` events and hands each new one to every subscription."""

    def __init__(self, capacity=1000):
        self._lock = threading.Lock()
        self._history = collections.deque()
        self._capacity = capacity
        self._floor = 0   # events with rv > floor are all kept
        self._subs = set()

    def publish(self, event):
        with self._lock:
            self._history.append(event)
            while len(self._history) > self._capacity:
                self._floor = self._history.popleft().rv
            subs = list(self._subs)
        for sub in subs:
            sub.offer(event)

    def subscribe(self, sub, since_rv):
        """Registers sub, first queueing the kept events newer than since_rv (None: none).

        Raises a 410 Expired ApiError when events after since_rv are no longer kept. The caller
        holds the store lock, so no event is published between the replay and the registration.
        """
        with self._lock:
            if since_rv is not None:
                if since_rv < self._floor:
                    raise expired("too old resource version: %d (%d)" % (since_rv, self._floor + 1))
                for event in self._history:
                    if event.rv > since_rv:
                        sub.offer(event)
            self._subs.add(sub)

    def unsubscribe(self, sub):
        with self._lock:
            self._subs.discard(sub)

    def compact(self, current_rv):
        """Forgets every kept event, as an etcd compaction does."""
        with self._lock:
            self._history.clear()
            self._floor = current_rv

    def drop_all(self):
        """Cuts every open watch (not the kubelet's, which are not HTTP watches)."""
        with self._lock:
            subs = [s for s in self._subs if not getattr(s, "internal", False)]
        for sub in subs:
            sub.drop()
        return len(subs)

    def open_watches(self):
        with self._lock:
            return sum(1 for s in self._subs if not getattr(s, "internal", False))

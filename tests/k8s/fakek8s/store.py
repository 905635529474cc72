"""The object store: every object of every resource, one cluster-wide resourceVersion counter."""

import copy
import datetime
import threading
import uuid

from . import errors
from .watch import Event, Subscription


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """Objects keyed by (resource, namespace, name); each change is an event with a new resourceVersion.

    Objects handed out are copies; objects kept and published in events are never mutated in place.
    """

    def __init__(self, hub):
        self.hub = hub
        self.lock = threading.RLock()
        self._rv = 0
        self._objects = {}

    @property
    def resource_version(self):
        with self.lock:
            return self._rv

    def _commit(self, type_, rtype, obj, old=None):
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        key = (rtype.name, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if type_ == "DELETED":
            del self._objects[key]
        else:
            self._objects[key] = obj
        self.hub.publish(Event(type_, rtype.name, obj, old, self._rv))
        return copy.deepcopy(obj)

    def _key(self, rtype, namespace, name):
        return rtype.name, namespace if rtype.namespaced else "", name

    def exists(self, rtype, namespace, name):
        with self.lock:
            return self._key(rtype, namespace, name) in self._objects

    def get(self, rtype, namespace, name):
        with self.lock:
            obj = self._objects.get(self._key(rtype, namespace, name))
            if obj is None:
                raise errors.not_found(rtype, name)
            return copy.deepcopy(obj)

    def list(self, rtype, namespace=None, obj_filter=None):
        """(objects sorted by namespace and name, resourceVersion of the list)."""
        with self.lock:
            items = [copy.deepcopy(obj) for (res, ns, _), obj in sorted(self._objects.items())
                     if res == rtype.name and (not namespace or ns == namespace)
                     and (obj_filter is None or obj_filter.matches(obj))]
            return items, self._rv

    def create(self, rtype, obj):
        """Stores a new object (its metadata.name set), filling uid, creationTimestamp, resourceVersion."""
        with self.lock:
            meta = obj["metadata"]
            if self._key(rtype, meta.get("namespace", ""), meta["name"]) in self._objects:
                raise errors.already_exists(rtype, meta["name"])
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            return self._commit("ADDED", rtype, copy.deepcopy(obj))

    def update(self, rtype, namespace, name, mutate, expected_rv=None, dry_run=False):
        """Applies mutate(copy) to the stored object and stores the result; returns it.

        mutate may return None to leave the object unchanged (no event, no new resourceVersion).
        A stale expected_rv is a 409 Conflict. dry_run returns the result without storing it.
        """
        with self.lock:
            old = self._objects.get(self._key(rtype, namespace, name))
            if old is None:
                raise errors.not_found(rtype, name)
            if expected_rv and expected_rv != old["metadata"]["resourceVersion"]:
                raise errors.conflict(rtype, name)
            new = mutate(copy.deepcopy(old))
            if new is None or new == old:
                return copy.deepcopy(old)
            if dry_run:
                return new
            return self._commit("MODIFIED", rtype, new, old)

    def remove(self, rtype, namespace, name, uid=None):
        """Deletes the object now; returns its last state, or None if it is gone (or another uid)."""
        with self.lock:
            old = self._objects.get(self._key(rtype, namespace, name))
            if old is None or (uid and old["metadata"].get("uid") != uid):
                return None
            return self._commit("DELETED", rtype, copy.deepcopy(old))

    def watch(self, rtype, namespace, obj_filter, since_rv, initial):
        """A subscription; `initial` first queues ADDED events for the objects there now."""
        sub = Subscription(rtype.name, namespace, obj_filter)
        with self.lock:
            sub.start_rv = self._rv
            if initial:
                for (res, _, _), obj in sorted(self._objects.items()):
                    if res == rtype.name:
                        sub.put_initial(obj)
                self.hub.subscribe(sub, None)
            else:
                self.hub.subscribe(sub, since_rv)
        return sub

    def bookmark_rv(self, sub):
        """The resourceVersion a bookmark may carry now: None while events are still queued for sub."""
        with self.lock:
            return self._rv if sub.idle() else None

    def compact(self):
        with self.lock:
            self.hub.compact(self._rv)

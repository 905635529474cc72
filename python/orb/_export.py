"""Functions and classes travel to workers once per job: pickled with cloudpickle into
the GCS key-value store, and named in tasks by a descriptor that ends with the pickle's
digest. Workers load each descriptor once and keep it."""
import hashlib
import threading

import cloudpickle

from orb import _core

KV_NAMESPACE = "orb_python_code"

_lock = threading.Lock()
_exported = set()  # descriptors this process has stored for its current job
_loaded = {}       # descriptor -> function or class, in a worker


def _key(descriptor):
    return "%s/%s" % (_core.job_id(), descriptor.rsplit(":", 1)[-1])


def descriptor_of(obj):
    """(descriptor, pickled bytes) for a function or class."""
    try:
        pickled = cloudpickle.dumps(obj)
    except Exception as e:
        raise TypeError("orb cannot pickle %s %s to send it to workers: %s" % (
            "class" if isinstance(obj, type) else "function", getattr(obj, "__qualname__", obj), e)) from e
    digest = hashlib.sha1(pickled).hexdigest()
    name = "%s.%s" % (getattr(obj, "__module__", "?"), getattr(obj, "__qualname__", "?"))
    return "py:%s:%s" % (name, digest), pickled


def export(descriptor, pickled):
    """Stores the code under `descriptor` for this job's workers, once per process."""
    with _lock:
        if descriptor in _exported:
            return
    _core.kv_put(KV_NAMESPACE, _key(descriptor), pickled)
    with _lock:
        _exported.add(descriptor)


def forget():
    """At shutdown: the next job (maybe on another cluster) exports again."""
    with _lock:
        _exported.clear()


def load(descriptor):
    """The function or class a descriptor names (in a worker)."""
    with _lock:
        found = _loaded.get(descriptor)
    if found is not None:
        return found
    pickled = _core.kv_get(KV_NAMESPACE, _key(descriptor))
    if pickled is None:
        raise RuntimeError("the code of %s was not exported for job %s" % (descriptor, _core.job_id()))
    obj = cloudpickle.loads(pickled)
    with _lock:
        _loaded[descriptor] = obj
    return obj

"""orb for Python: Ray's Python API shape (`ray` renamed `orb`) on orb's C++ core.

    import orb
    orb.init()                      # no address: a local cluster for this program
    ref = orb.put(numpy.zeros(10**7))
    array = orb.get(ref)            # a read-only view over the shared-memory store
    orb.shutdown()

    @orb.remote
    def square(x):
        return x * x
    orb.get([square.remote(i) for i in range(4)])   # [0, 1, 4, 9], run by Python workers

    @orb.remote
    class Counter:
        def __init__(self):
            self.n = 0
        def incr(self):
            self.n += 1
            return self.n
    c = Counter.remote()
    orb.get(c.incr.remote())                        # 1
"""
import os
import site
import sys
import sysconfig
import threading

from orb import _core, _export, _options
from orb import exceptions
from orb import util  # noqa: F401
from orb._core import ObjectRef
from orb._generator import ObjectRefGenerator
from orb._serialization import Serialized, deserialize
from orb.actor import ActorClass, ActorHandle
from orb.cross_language import cpp_actor_class, cpp_function
from orb.remote_function import RemoteFunction

__all__ = ["init", "shutdown", "is_initialized", "put", "get", "wait", "remote", "method", "get_actor", "kill",
           "cancel", "nodes", "cluster_resources", "available_resources", "get_runtime_context", "cpp_function",
           "cpp_actor_class", "ObjectRef", "ObjectRefGenerator", "ActorHandle",
           "exceptions", "util"]


def _worker_python_path():
    """The driver's module search path, less what every interpreter has anyway: the
    directories workers need to import the driver's modules (and orb itself)."""
    standard = {os.path.realpath(p) for p in site.getsitepackages() + [site.getusersitepackages()] if p}
    for key in ("stdlib", "platstdlib"):
        standard.add(os.path.realpath(sysconfig.get_path(key)))
    path = []
    for entry in sys.path + [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]:
        entry = os.path.abspath(entry or os.getcwd())
        real = os.path.realpath(entry)
        if not os.path.isdir(entry) or real in standard or any(real.startswith(s + os.sep) for s in standard):
            continue
        if entry not in path:
            path.append(entry)
    return path


__version__ = "0.1.0"  # as setup.py and CMakeLists.txt say

# The lifetime of this job's actors that set none (JobConfig.default_actor_lifetime); a
# worker learns its job's from its environment.
_default_actor_lifetime = os.environ.get("ORB_DEFAULT_ACTOR_LIFETIME") or "non_detached"


def _on_completed(ref, callback):
    """Ray's ObjectRef._on_completed(callback): `callback(value or error)` once ready."""
    from orb._async import on_completed
    on_completed(ref, callback)


ObjectRef._on_completed = _on_completed


def init(address=None, *, namespace=None, num_cpus=None, num_gpus=None, resources=None,
         object_store_memory=None, local_mode=False, ignore_reinit_error=False, code_search_path=None,
         prestart_workers=0, runtime_env=None, job_config=None, _system_config=None):
    """Connects this program to a cluster, or starts a local one for it.

    address: "HOST:PORT" of a running cluster's GCS, "auto" for the local one; None:
    $ORB_ADDRESS, else a cluster (a GCS and a raylet) started for this program and
    stopped at shutdown(). num_cpus, num_gpus, resources and object_store_memory size
    that local cluster. code_search_path: directories of C++ libraries with ORB_REMOTE
    functions, for cross-language calls. prestart_workers: idle Python workers each node
    starts for this job as soon as it learns of it (now, or when it joins later), at most
    its CPUs, so that the first tasks there do not wait for an interpreter to start.

    The job's Python workers run this interpreter, with this program's module search
    path: functions and classes defined in its modules import there. runtime_env: the
    job's runtime environment (Ray's dict), under every task's and actor's own.
    job_config: Ray's orb.job_config.JobConfig, whose code_search_path, runtime_env and
    ray_namespace add to (or stand for) the arguments of the same names, and whose
    default_actor_lifetime applies to the job's actors that set none.
    _system_config (Ray's internal tuning) is accepted and not used: orb's daemons take
    their settings from their flags.
    """
    global _default_actor_lifetime
    detached_by_default = False
    if job_config is not None:
        from orb.job_config import JobConfig
        if not isinstance(job_config, JobConfig):
            raise TypeError("job_config must be an orb.job_config.JobConfig, not %s" % type(job_config).__name__)
        code_search_path = list(code_search_path or []) + job_config.code_search_path
        runtime_env = runtime_env if runtime_env is not None else job_config.runtime_env
        namespace = namespace or job_config.ray_namespace
        detached_by_default = job_config.default_actor_lifetime == "detached"
    if _system_config is not None and not isinstance(_system_config, dict):
        raise TypeError("_system_config must be a dict, not %s" % type(_system_config).__name__)
    if runtime_env is not None and not isinstance(runtime_env, dict):
        raise TypeError("runtime_env must be a dict, not %s" % type(runtime_env).__name__)
    if _core.is_initialized():
        if ignore_reinit_error:
            return _context()
        raise RuntimeError("orb.init() was already called; call orb.shutdown() first "
                           "(or pass ignore_reinit_error=True)")
    if resources is not None and not isinstance(resources, dict):
        raise TypeError("resources must be a dict of resource name to amount, not %s" % type(resources).__name__)
    if isinstance(prestart_workers, bool) or not isinstance(prestart_workers, int) or prestart_workers < 0:
        raise ValueError("prestart_workers must be an int >= 0, not %r" % (prestart_workers,))
    if local_mode:
        raise ValueError("local_mode is not supported by orb's Python API yet: use orb.init() (a local cluster)")
    _core.set_python_workers(sys.executable, _worker_python_path())
    _core.init(address=address or "", namespace=namespace or "",
               num_cpus=-1.0 if num_cpus is None else float(num_cpus),
               num_gpus=-1.0 if num_gpus is None else float(num_gpus),
               resources={str(k): float(v) for k, v in (resources or {}).items()},
               object_store_memory=int(object_store_memory or 0), local_mode=False,
               code_search_path=[os.path.abspath(p) for p in (code_search_path or [])],
               prestart_workers=prestart_workers,
               runtime_env=_options.runtime_env_json(runtime_env) if runtime_env else "",
               detached_actors_by_default=detached_by_default)
    _default_actor_lifetime = "detached" if detached_by_default else "non_detached"
    return _context()


class OrbContext(dict):
    """What init() returns, as Ray's RayContext: `address_info` (the GCS address, this
    node's ID and address, the dashboard's URL), `dashboard_url`, `python_version` and
    `orb_version`; read as a dict too. `with orb.init(): ...` shuts down at the end."""

    def __init__(self, address_info):
        super().__init__(address_info)
        self.address_info = address_info
        self.dashboard_url = address_info.get("webui_url") or None
        self.python_version = "%d.%d.%d" % sys.version_info[:3]
        self.orb_version = self.ray_version = __version__

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutdown()

    def disconnect(self):
        shutdown()


def _context():
    gcs = _core.gcs_address()
    node_id = _core.node_id()
    node_ip = gcs.rsplit(":", 1)[0]
    for node in nodes():
        if node.get("NodeID") == node_id:
            node_ip = node.get("NodeManagerAddress") or node_ip
    endpoints = _core.cluster_endpoints()
    return OrbContext({"gcs_address": gcs, "address": gcs, "node_id": node_id, "node_ip_address": node_ip,
                       "webui_url": endpoints["dashboard"], "metrics_export_address": endpoints["metrics"]})


def shutdown():
    """Disconnects; stops the cluster init() started, if it did."""
    if _core.is_initialized():
        _core.shutdown()
    _export.forget()


def is_initialized():
    return _core.is_initialized()


def _check_initialized(what):
    """As Ray's auto-init: the first call that needs a cluster runs orb.init() (which
    connects to $ORB_ADDRESS or starts one for this program), unless
    ORB_ENABLE_AUTO_CONNECT=0 (Ray's RAY_ENABLE_AUTO_CONNECT)."""
    if _core.is_initialized():
        return
    if os.environ.get("ORB_ENABLE_AUTO_CONNECT", "1") == "0":
        raise RuntimeError("orb.%s() needs orb.init() first (ORB_ENABLE_AUTO_CONNECT=0 turns auto-init off)" % what)
    with _auto_init_lock:  # many threads' first calls at once start one cluster
        if not _core.is_initialized():
            init()


_auto_init_lock = threading.Lock()


def put(value):
    """Stores `value` in the cluster and returns an ObjectRef to it. Arrays and other
    buffers are copied once, into the shared-memory store when large."""
    _check_initialized("put")
    if isinstance(value, ObjectRef):
        raise TypeError("orb.put() of an ObjectRef is not allowed (as in Ray): put the value, or pass the ref")
    return _core.put(Serialized(value))


def _timeout_ms(timeout):
    if timeout is None:
        return -1
    if timeout < 0:
        raise ValueError("timeout must be None or >= 0, not %r" % (timeout,))
    return int(timeout * 1000)


def get(refs, *, timeout=None):
    """The value of an ObjectRef, or the values of a list of them, waiting up to
    `timeout` seconds (None: without limit) before raising GetTimeoutError."""
    _check_initialized("get")
    if isinstance(refs, ObjectRefGenerator):  # as Ray's: a generator is its own value
        return refs
    single = isinstance(refs, ObjectRef)
    ref_list = [refs] if single else list(refs)
    for r in ref_list:
        if not isinstance(r, ObjectRef):
            raise TypeError("orb.get() takes an ObjectRef or a list of them, not %s" % type(r).__name__)
    values = [deserialize(v) for v in _core.get(ref_list, _timeout_ms(timeout))]
    return values[0] if single else values


def wait(refs, *, num_returns=1, timeout=None):
    """(ready, not_ready): waits until `num_returns` of `refs` are ready or `timeout`
    seconds pass. Both lists keep the order of `refs`."""
    _check_initialized("wait")
    refs = list(refs)
    if any(not isinstance(r, (ObjectRef, ObjectRefGenerator)) for r in refs):
        raise TypeError("orb.wait() takes a list of ObjectRefs and ObjectRefGenerators")
    if len(set(refs)) != len(refs):
        raise ValueError("orb.wait() got the same ObjectRef twice")
    if not refs:
        return [], []  # as Ray's: nothing to wait for
    if not 0 <= num_returns <= len(refs):
        raise ValueError("num_returns must be between 0 and len(refs) (%d), not %d" % (len(refs), num_returns))
    if any(isinstance(r, ObjectRefGenerator) for r in refs):
        flags = _wait_with_generators(refs, num_returns, timeout)
    else:
        flags = _core.wait(refs, num_returns, _timeout_ms(timeout))
    ready = [r for r, f in zip(refs, flags) if f][:num_returns] if num_returns else []
    chosen = set(ready)
    return ready, [r for r in refs if r not in chosen]


def _wait_with_generators(refs, num_returns, timeout):
    """orb.wait's flags when some of `refs` are ObjectRefGenerators: one is ready when its
    next item (or its end) is here, as in Ray. Looks every 10 ms."""
    import time
    deadline = None if timeout is None else time.monotonic() + timeout
    plain = [r for r in refs if isinstance(r, ObjectRef)]
    while True:
        plain_ready = dict(zip(plain, _core.wait(plain, 0, 0))) if plain else {}
        flags = [r._ready(0) if isinstance(r, ObjectRefGenerator) else plain_ready[r] for r in refs]
        left = None if deadline is None else deadline - time.monotonic()
        if sum(flags) >= num_returns or (left is not None and left <= 0):
            return flags
        pause = 0.01 if left is None else max(0.0, min(0.01, left))
        if plain:
            _core.wait(plain, min(len(plain), sum(plain_ready.values()) + 1), int(pause * 1000))
        else:
            time.sleep(pause)


def remote(*args, **options):
    """Makes a function a remote function, or a class an actor class:

        @orb.remote
        def f(x): ...
        @orb.remote(num_cpus=2, max_retries=1)
        def g(x): ...
        @orb.remote(max_restarts=-1)
        class Worker: ...
    """
    def make(target):
        if isinstance(target, type):
            return ActorClass(target, options)
        if callable(target):
            return RemoteFunction(target, options)
        raise TypeError("@orb.remote applies to a function or a class, not %r" % (target,))

    if len(args) == 1 and not options and callable(args[0]):
        return make(args[0])
    if args:
        raise TypeError("@orb.remote takes options by keyword: @orb.remote(num_cpus=1)")
    return make


def method(**options):
    """Ray's @ray.method: default options for calls of one actor method, as
    `.options()` takes them (num_returns=2: each call returns two refs)."""
    _options.check(options, _options.METHOD_OPTIONS, "@orb.method")
    _options.num_returns(options)
    _options.backpressure(options)

    def mark(function):
        function.__orb_method_options__ = dict(options)
        return function
    return mark


def get_actor(name, namespace=None):
    """The handle of the live actor named `name` (in `namespace`, default the job's);
    ValueError when there is none."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("get_actor() needs an actor's name (a non-empty string), not %r" % (name,))
    _check_initialized("get_actor")
    actor_id = _core.get_named_actor(name, namespace or "")
    if not actor_id:
        raise ValueError("Failed to look up actor with name %r in namespace %r" % (name, namespace or _core.namespace()))
    return ActorHandle(actor_id, name)


def kill(actor, *, no_restart=True):
    """Ends an actor now (its calls in flight fail with ActorDiedError); with
    no_restart=False it restarts if it has restarts left."""
    _check_initialized("kill")
    if not isinstance(actor, ActorHandle):  # Ray's ValueError
        raise ValueError("orb.kill() takes an actor handle (for a task, use orb.cancel()), not %s"
                         % type(actor).__name__)
    _core.kill_actor(actor._actor_id, no_restart)


def cancel(ref, *, force=False, recursive=True):
    """Cancels the task that returns `ref` (Ray's ray.cancel). A queued task never runs;
    a running one gets KeyboardInterrupt (an async actor call's coroutine is cancelled);
    `force=True` kills the worker running it; `recursive` cancels the tasks it submitted
    too. orb.get then raises TaskCancelledError; a task that had already finished keeps
    its result. A running sync actor call is left to finish, and `force` is refused for
    actor calls (ValueError), as in Ray. A process that borrowed `ref` cancels through
    the task's owner."""
    _check_initialized("cancel")
    if isinstance(ref, ObjectRefGenerator):  # a streaming task, as Ray's
        ref = ref.completed()
    if not isinstance(ref, ObjectRef):
        raise TypeError("orb.cancel() takes an ObjectRef or an ObjectRefGenerator, not %s" % type(ref).__name__)
    _core.cancel(ref, bool(force), bool(recursive))


def nodes():
    """Every node the cluster knows, alive or dead, as dicts with Ray's keys."""
    _check_initialized("nodes")
    out = []
    for n in _core.nodes():
        host, _, port = n.address.rpartition(":")
        out.append({"NodeID": n.node_id, "Alive": n.alive, "NodeManagerAddress": host,
                    "NodeManagerPort": int(port) if port.isdigit() else 0,
                    "Resources": dict(n.resources_total), "Labels": dict(n.labels),
                    "ObjectStoreMemory": n.object_store_memory})
    return out


def _sum_resources(field):
    total = {}
    for n in _core.nodes():
        if not n.alive:
            continue
        for name, amount in getattr(n, field).items():
            total[name] = total.get(name, 0.0) + amount
    return total


def cluster_resources():
    """Resources of the alive nodes, summed."""
    _check_initialized("cluster_resources")
    return _sum_resources("resources_total")


def available_resources():
    """Resources free now on the alive nodes, summed."""
    _check_initialized("available_resources")
    return _sum_resources("resources_available")


class RuntimeContext:
    """Where this code runs (Ray's ray.get_runtime_context())."""

    def get_node_id(self):
        return _core.node_id()

    def get_job_id(self):
        return _core.job_id()

    def get_worker_id(self):
        """This process's worker ID (hex; a driver's too), as Ray's."""
        return _core.worker_id()

    def get_task_id(self):
        return _core.task_id() or None

    def get_actor_id(self):
        return _core.current_actor_id() or None

    def get_assigned_resources(self):
        """The resources the current task or actor holds ({"CPU": 1.0}; in a placement
        group by their plain names); {} in the driver."""
        return dict(_core.assigned_resources())

    def get_placement_group_id(self):
        """The placement group (hex ID) this task or actor runs in, or None."""
        return _core.placement_group_id() or None

    @property
    def current_actor(self):
        """A handle to the actor this code runs in (it does not keep the actor alive)."""
        actor_id = _core.current_actor_id()
        if not actor_id:
            raise RuntimeError("current_actor is only available inside an actor")
        from orb import _worker
        from orb.actor import handle_of
        return handle_of(bytes.fromhex(actor_id), _worker.current_actor_class)

    def is_canceled(self):
        """Whether orb.cancel interrupted the task or actor call running here (True from
        its `except KeyboardInterrupt` on), as Ray's."""
        from orb import _worker
        return threading.get_ident() in _worker.cancelled_threads

    def get_accelerator_ids(self):
        """The accelerators this worker may use, by kind: {"GPU": ["0", "1"]} (its lease's
        GPUs, from CUDA_VISIBLE_DEVICES; empty when it holds none)."""
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        return {"GPU": [g for g in visible.split(",") if g.strip()]}

    @property
    def was_current_actor_reconstructed(self):
        return _core.was_current_actor_restarted()

    @property
    def namespace(self):
        return _core.namespace()

    @property
    def gcs_address(self):
        return _core.gcs_address()


def get_runtime_context():
    _check_initialized("get_runtime_context")
    return RuntimeContext()


from orb import runtime_context  # noqa: E402,F401 (orb.runtime_context, as ray.runtime_context)
from orb import job_config  # noqa: E402,F401 (orb.job_config.JobConfig, as ray.job_config)

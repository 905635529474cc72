"""The fake kubelet: runs each pod's first container as a local process group and reports its status.

Deviations from a real kubelet (see README.md): only containers[0] runs, without an image (its
`command` is required), in this machine's network namespace; a container that exits marks the pod
Succeeded (exit 0) or Failed whatever the restartPolicy (no restarts).
"""

import base64
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

from .errors import ApiError
from .store import now_rfc3339

BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ConfigError(Exception):
    """The container's configuration cannot be resolved yet (CreateContainerConfigError)."""


def expand(text, mapping):
    """Kubernetes $(VAR) expansion: defined variables are replaced, $$ is an escaped $, the rest kept."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            if text[i + 1] == "$":
                out.append("$")
                i += 2
                continue
            if text[i + 1] == "(":
                close = text.find(")", i + 2)
                if close != -1:
                    name = text[i + 2:close]
                    out.append(mapping[name] if name in mapping else text[i:close + 1])
                    i = close + 1
                    continue
        out.append(text[i])
        i += 1
    return "".join(out)


class EnvResolver:
    """Builds a container's environment from its spec, stored Secrets/ConfigMaps and the pod's fields."""

    def __init__(self, store, registry, pod_ip, node_name):
        self.store, self.registry, self.pod_ip, self.node_name = store, registry, pod_ip, node_name

    def _key_ref(self, resource, ref, namespace):
        rtype = self.registry.by_name(resource)
        label = "Secret" if resource == "secrets" else "ConfigMap"
        try:
            obj = self.store.get(rtype, namespace, ref.get("name", ""))
        except ApiError:
            if ref.get("optional"):
                return None
            raise ConfigError('%s "%s" not found' % (label.lower(), ref.get("name", "")))
        data = obj.get("data") or {}
        if ref["key"] not in data:
            if ref.get("optional"):
                return None
            raise ConfigError("couldn't find key %s in %s %s/%s" % (ref["key"], label, namespace, ref.get("name")))
        value = data[ref["key"]]
        return base64.b64decode(value).decode("utf-8", "replace") if resource == "secrets" else value

    def _field_ref(self, pod, path):
        meta = pod["metadata"]
        match = re.match(r"^metadata\.(labels|annotations)\['([^']+)'\]$", path)
        if match:
            return (meta.get(match.group(1)) or {}).get(match.group(2), "")
        return {"metadata.name": meta["name"], "metadata.namespace": meta.get("namespace", ""),
                "metadata.uid": meta.get("uid", ""), "spec.nodeName": self.node_name,
                "spec.serviceAccountName": pod["spec"].get("serviceAccountName", ""),
                "status.podIP": self.pod_ip, "status.podIPs": self.pod_ip,
                "status.hostIP": self.pod_ip, "status.hostIPs": self.pod_ip}.get(path, "")

    def _value_from(self, pod, container, source):
        namespace = pod["metadata"].get("namespace", "")
        if source.get("secretKeyRef"):
            return self._key_ref("secrets", source["secretKeyRef"], namespace)
        if source.get("configMapKeyRef"):
            return self._key_ref("configmaps", source["configMapKeyRef"], namespace)
        if source.get("fieldRef"):
            return self._field_ref(pod, source["fieldRef"].get("fieldPath", ""))
        if source.get("resourceFieldRef"):
            resource = source["resourceFieldRef"].get("resource", "")
            group, _, name = resource.partition(".")
            return str(((container.get("resources") or {}).get(group) or {}).get(name, "0"))
        return ""

    def _env_from(self, pod, source):
        namespace, out = pod["metadata"].get("namespace", ""), {}
        for resource, key in (("secrets", "secretRef"), ("configmaps", "configMapRef")):
            ref = source.get(key)
            if not ref:
                continue
            try:
                obj = self.store.get(self.registry.by_name(resource), namespace, ref.get("name", ""))
            except ApiError:
                if ref.get("optional"):
                    continue
                raise ConfigError('%s "%s" not found' % (resource[:-1], ref.get("name", "")))
            for name, value in (obj.get("data") or {}).items():
                if resource == "secrets":
                    value = base64.b64decode(value).decode("utf-8", "replace")
                out[source.get("prefix", "") + name] = value
        return out

    def resolve(self, pod, container, base):
        env = dict(base)
        for source in container.get("envFrom") or []:
            env.update(self._env_from(pod, source))
        for var in container.get("env") or []:
            if var.get("valueFrom"):
                value = self._value_from(pod, container, var["valueFrom"])
                if value is None:
                    continue
            else:
                value = expand(var.get("value", ""), env)
            env[var["name"]] = value
        return env


class PodRuntime:
    """One pod's process, as far as the kubelet knows it."""

    def __init__(self, pod):
        meta = pod["metadata"]
        self.namespace, self.name, self.uid = meta.get("namespace", ""), meta["name"], meta["uid"]
        self.lock = threading.Lock()
        self.proc = None
        self.deleting = False
        self.kill_at = None      # time.monotonic() when SIGKILL is due (the grace period ends)
        self.killed = False
        self.exited = threading.Event()
        self.started_at = None
        self.reported_running = False
        self.worker = None       # the thread that starts the process and waits for it
        self.done = False        # the worker has finished its job (it is not restarted)


class FakeKubelet:
    """Runs each pod as a process group. One event thread follows the pods (a watch on the store) and
    does the quick work: it starts a worker thread per pod (start delay, Secrets/ConfigMaps, the process,
    waiting for it to exit), sends SIGTERM when a pod is deleted and SIGKILL when its grace period ends.
    Every RESYNC_S it also compares the stored pods with what it runs, as a real kubelet's periodic sync
    does, so that work which failed (an exception, a thread that could not be started) is done later."""

    RESYNC_S = 1.0

    def __init__(self, store, registry, state_dir, pod_ip="127.0.0.1", node_name="fake-node",
                 env_passthrough=(), start_delay_ms=0, max_shutdown_grace_s=10.0):
        self.store, self.registry = store, registry
        self.pods_rtype = registry.by_name("pods")
        self.log_dir = os.path.join(state_dir, "pods")
        self.pod_ip, self.node_name = pod_ip, node_name
        self.start_delay_s = start_delay_ms / 1000.0
        self.max_shutdown_grace_s = max_shutdown_grace_s
        self.base_env = {"PATH": os.environ.get("PATH") or BASE_PATH, "HOME": os.environ.get("HOME", "/")}
        self.base_env.update({k: os.environ[k] for k in env_passthrough if k in os.environ})
        self.resolver = EnvResolver(store, registry, pod_ip, node_name)
        self.api_port = None
        self._runtimes = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._sub = None

    # ---- lifecycle
    def start(self, api_port):
        self.api_port = api_port
        os.makedirs(self.log_dir, exist_ok=True)
        self._register_node()
        self._sub = self.store.watch(self.pods_rtype, None, None, None, initial=True)
        self._sub.internal = True
        threading.Thread(target=self._event_loop, name="kubelet-events", daemon=True).start()

    def stop(self):
        """Terminates every pod process: SIGTERM, then SIGKILL after its grace period (capped)."""
        self._stopping.set()
        if self._sub:
            self._sub.drop()
            self.store.hub.unsubscribe(self._sub)
        with self._lock:
            runtimes = list(self._runtimes.values())
        deadlines = []
        for rt in runtimes:
            with rt.lock:
                rt.deleting = True
                if rt.proc and not rt.exited.is_set():
                    self._signal(rt, signal.SIGTERM)
                    deadlines.append((rt, time.monotonic() + min(self._grace(rt), self.max_shutdown_grace_s)))
        for rt, deadline in deadlines:
            if not rt.exited.wait(max(0.0, deadline - time.monotonic())):
                self._signal(rt, signal.SIGKILL)
                rt.exited.wait(2)

    def _register_node(self):
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node_name, "labels": {
            "kubernetes.io/hostname": self.node_name, "kubernetes.io/os": "linux"}},
            "spec": {}, "status": {
                "addresses": [{"type": "InternalIP", "address": self.pod_ip},
                              {"type": "Hostname", "address": self.node_name}],
                "capacity": {"cpu": str(os.cpu_count() or 1), "memory": "16Gi", "pods": "110"},
                "allocatable": {"cpu": str(os.cpu_count() or 1), "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "message": "kubelet is posting ready status",
                                "lastHeartbeatTime": now_rfc3339(), "lastTransitionTime": now_rfc3339()}],
                "nodeInfo": {"kubeletVersion": "v1.32.0", "operatingSystem": "linux", "architecture": "amd64"}}}
        try:
            self.store.create(self.registry.by_name("nodes"), node)
        except ApiError:
            pass

    @staticmethod
    def _log_exception(what):
        """An unexpected error, with its traceback (the tests fail on a "Traceback" in the log)."""
        sys.stderr.write("fake-kubelet: %s failed (carrying on):\n%s" % (what, traceback.format_exc()))
        sys.stderr.flush()

    # ---- events
    def _event_loop(self):
        """Never ends before stop(): an error is logged and whatever it left undone is done by a later
        resync, so that one failure cannot leave every later pod unstarted or undeleted."""
        next_resync = time.monotonic() + self.RESYNC_S
        while not self._stopping.is_set():
            try:
                now = time.monotonic()
                item = self._sub.next(timeout=max(0.0, min(next_resync, self._next_kill_at()) - now))
                if item is not None:
                    self._handle(*item)
                self._kill_overdue()
                if time.monotonic() >= next_resync:
                    next_resync = time.monotonic() + self.RESYNC_S
                    self._resync()
            except Exception:
                self._log_exception("the kubelet's event loop")
                self._stopping.wait(0.1)

    def _handle(self, kind, pod):
        meta = pod["metadata"]
        if kind == "ADDED" and not meta.get("deletionTimestamp"):
            self._add(pod)
        elif kind == "MODIFIED" and meta.get("deletionTimestamp"):
            self._terminate(meta.get("uid"), meta.get("deletionGracePeriodSeconds", 30))
        elif kind == "DELETED":   # removed without waiting for us (grace 0): kill what is left now
            self._terminate(meta.get("uid"), 0)

    def _add(self, pod):
        uid = pod["metadata"]["uid"]
        with self._lock:
            if uid in self._runtimes:
                return
            rt = self._runtimes[uid] = PodRuntime(pod)
        self._start_worker(rt)

    def _start_worker(self, rt):
        """Starts rt's worker; if the thread cannot be started (no resources), the next resync tries again."""
        worker = threading.Thread(target=self._pod_worker, args=(rt,), name="pod-" + rt.name, daemon=True)
        try:
            worker.start()
        except RuntimeError:
            self._log_exception("starting the worker of pod %s/%s" % (rt.namespace, rt.name))
            return
        rt.worker = worker

    def _terminate(self, uid, grace):
        """SIGTERM now and SIGKILL after grace (at once if grace is 0; a shorter grace period, from a
        second delete, brings SIGKILL forward); a pod with no process left is removed from the API now,
        one with a process when it has exited (see _wait_exit)."""
        with self._lock:
            rt = self._runtimes.get(uid)
        if rt is None:
            return
        with rt.lock:
            rt.deleting = True
            running = rt.proc is not None and not rt.exited.is_set()
            if running:
                if rt.kill_at is None and grace > 0:
                    self._signal(rt, signal.SIGTERM)
                kill_at = time.monotonic() + grace
                rt.kill_at = kill_at if rt.kill_at is None else min(rt.kill_at, kill_at)
        if running:
            self._kill_overdue()
        else:
            self._forget(rt)
            self.store.remove(self.pods_rtype, rt.namespace, rt.name, rt.uid)

    def _next_kill_at(self):
        with self._lock:
            return min([rt.kill_at for rt in self._runtimes.values() if rt.kill_at is not None and not rt.killed],
                       default=float("inf"))

    def _kill_overdue(self):
        """SIGKILL for the processes whose grace period has ended."""
        now = time.monotonic()
        with self._lock:
            due = [rt for rt in self._runtimes.values() if rt.kill_at is not None and rt.kill_at <= now
                   and not rt.killed]
        for rt in due:
            with rt.lock:
                rt.killed = True
                if not rt.exited.is_set():
                    self._signal(rt, signal.SIGKILL)

    def _resync(self):
        """Level-triggered catch-up: does for each stored pod what its events should have led to."""
        with self._lock:   # first: a runtime is added by this thread only, so each listed pod without
            runtimes = dict(self._runtimes)   # one is a pod this kubelet has not seen (or has let go)
        pods = {p["metadata"]["uid"]: p for p in self.store.list(self.pods_rtype)[0]}
        for uid, pod in pods.items():
            meta, rt = pod["metadata"], runtimes.get(uid)
            if rt is None:
                if meta.get("deletionTimestamp"):   # nothing of it runs here: nothing to wait for
                    self.store.remove(self.pods_rtype, meta.get("namespace", ""), meta["name"], uid)
                elif pod.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
                    self._add(pod)
            elif meta.get("deletionTimestamp") and (not rt.deleting or rt.exited.is_set()):
                self._terminate(uid, meta.get("deletionGracePeriodSeconds", 30))
        for uid, rt in runtimes.items():
            if uid not in pods:
                self._terminate(uid, 0)
            elif not rt.done and not (rt.worker and rt.worker.is_alive()):
                self._start_worker(rt)

    @staticmethod
    def _signal(rt, sig):
        try:
            os.killpg(rt.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _grace(self, rt):
        try:
            pod = self.store.get(self.pods_rtype, rt.namespace, rt.name)
        except ApiError:
            return 0
        return pod["metadata"].get("deletionGracePeriodSeconds",
                                   pod["spec"].get("terminationGracePeriodSeconds", 30))

    def _forget(self, rt):
        with self._lock:
            self._runtimes.pop(rt.uid, None)

    # ---- one pod
    def _update(self, rt, mutate):
        """Applies mutate(pod) to the stored pod if it is still this pod; False if it is gone."""
        def guarded(pod):
            if pod["metadata"].get("uid") != rt.uid:
                return None
            mutate(pod)
            return pod
        try:
            self.store.update(self.pods_rtype, rt.namespace, rt.name, guarded)
            return True
        except ApiError:
            return False

    def _pod_worker(self, rt):
        """Starts the pod's process and waits for it. Run again by a resync if it failed, so each step
        is safe to repeat: binding, starting only while no process was started, reaping."""
        try:
            if rt.proc is None:
                self._run_pod(rt)
            if rt.proc is not None:
                if not rt.reported_running:
                    self._update(rt, lambda pod: self._set_running(pod, rt))
                    rt.reported_running = True
                self._wait_exit(rt)
            rt.done = True
        except Exception:
            self._log_exception("the worker of pod %s/%s" % (rt.namespace, rt.name))

    def _run_pod(self, rt):
        if self._stopping.wait(self.start_delay_s) or rt.deleting:
            return
        if not self._update(rt, self._bind):
            return
        env = self._wait_for_config(rt)
        if env is None:
            return
        with rt.lock:
            if rt.deleting or self._stopping.is_set() or rt.proc is not None:
                return
            error = self._spawn(rt, env)
        if error:
            self._update(rt, lambda pod: self._set_failed_start(pod, error))

    def _wait_for_config(self, rt):
        """The container's environment; while a Secret/ConfigMap it needs is missing, the pod waits
        with reason CreateContainerConfigError and the kubelet retries every second."""
        while not rt.deleting and not self._stopping.is_set():
            try:
                pod = self.store.get(self.pods_rtype, rt.namespace, rt.name)
            except ApiError:
                return None
            if pod["metadata"].get("uid") != rt.uid:
                return None
            container = pod["spec"]["containers"][0]
            try:
                return pod, self.resolver.resolve(pod, container, self._base_env(pod))
            except ConfigError as e:
                self._update(rt, lambda p, msg=str(e): self._set_waiting(p, "CreateContainerConfigError", msg))
            self._stopping.wait(1.0)
        return None

    def _base_env(self, pod):
        env = dict(self.base_env)
        env["HOSTNAME"] = pod["metadata"]["name"]
        if self.api_port:
            env.update({"KUBERNETES_SERVICE_HOST": self.pod_ip, "KUBERNETES_SERVICE_PORT": str(self.api_port),
                        "KUBERNETES_PORT": "tcp://%s:%d" % (self.pod_ip, self.api_port)})
        return env

    def _spawn(self, rt, pod_env):
        """Starts the process; returns an error message if it could not be started."""
        pod, env = pod_env
        container = pod["spec"]["containers"][0]
        if not container.get("command"):
            return ("fake kubelet: container %s has no command (image entrypoints are not known to the fake)"
                    % container.get("name"))
        argv = [expand(a, env) for a in container["command"] + (container.get("args") or [])]
        log_path = os.path.join(self.log_dir, "%s_%s.log" % (rt.namespace, rt.name))
        try:
            with open(log_path, "wb") as log:
                rt.proc = subprocess.Popen(argv, env=env, cwd=container.get("workingDir") or None, stdout=log,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           start_new_session=True)
        except (OSError, ValueError, subprocess.SubprocessError) as e:   # ValueError: a NUL in argv or env
            return "failed to start container %s: exec: %s" % (container.get("name"), e)
        rt.started_at = now_rfc3339()
        return None

    def _wait_exit(self, rt):
        code = rt.proc.wait()
        exit_code = code if code >= 0 else 128 - code
        self._signal(rt, signal.SIGKILL)   # what the container runtime does to the rest of the container
        _wait_group_gone(rt.proc.pid)
        rt.exited.set()
        with rt.lock:
            deleting = rt.deleting
        if deleting:
            self._forget(rt)
            self.store.remove(self.pods_rtype, rt.namespace, rt.name, rt.uid)
        else:
            self._update(rt, lambda pod: self._set_exited(pod, rt, exit_code))

    # ---- status
    def _bind(self, pod):
        """The scheduler's part: the pod is bound to the fake node."""
        pod["spec"]["nodeName"] = self.node_name
        _set_condition(pod, "PodScheduled", "True")

    def _container_status(self, pod, state, ready, pid=None):
        c = pod["spec"]["containers"][0]
        status = {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": ready,
                  "restartCount": 0, "started": "running" in state, "state": state, "lastState": {}}
        if pid:
            status["containerID"] = "fake://%d" % pid
            status["imageID"] = "fake-image://" + c.get("image", "")
        return [status]

    def _set_waiting(self, pod, reason, message):
        status = pod.setdefault("status", {})
        status["containerStatuses"] = self._container_status(pod, {"waiting": {"reason": reason,
                                                                               "message": message}}, False)
        _set_condition(pod, "Ready", "False", "ContainersNotReady")

    def _set_running(self, pod, rt):
        status = pod.setdefault("status", {})
        status.update({"phase": "Running", "hostIP": self.pod_ip, "hostIPs": [{"ip": self.pod_ip}],
                       "podIP": self.pod_ip, "podIPs": [{"ip": self.pod_ip}], "startTime": rt.started_at})
        status["containerStatuses"] = self._container_status(
            pod, {"running": {"startedAt": rt.started_at}}, True, rt.proc.pid)
        for cond in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"):
            _set_condition(pod, cond, "True")

    def _set_exited(self, pod, rt, exit_code):
        status = pod.setdefault("status", {})
        status["phase"] = "Succeeded" if exit_code == 0 else "Failed"
        state = {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                                "startedAt": rt.started_at, "finishedAt": now_rfc3339(),
                                "containerID": "fake://%d" % rt.proc.pid}}
        status["containerStatuses"] = self._container_status(pod, state, False, rt.proc.pid)
        reason = "PodCompleted" if exit_code == 0 else "PodFailed"
        for cond in ("ContainersReady", "Ready"):
            _set_condition(pod, cond, "False", reason)

    def _set_failed_start(self, pod, message):
        status = pod.setdefault("status", {})
        status["phase"] = "Failed"
        state = {"terminated": {"exitCode": 128, "reason": "StartError", "message": message,
                                "startedAt": now_rfc3339(), "finishedAt": now_rfc3339()}}
        status["containerStatuses"] = self._container_status(pod, state, False)
        _set_condition(pod, "Ready", "False", "PodFailed")

    # ---- logs
    def log_path(self, pod):
        return os.path.join(self.log_dir, "%s_%s.log" % (pod["metadata"].get("namespace", ""),
                                                       pod["metadata"]["name"]))

    def processes(self):
        """{"namespace/name": {"pid", "uid", "running"}} for the pods whose process was started."""
        with self._lock:
            runtimes = list(self._runtimes.values())
        return {"%s/%s" % (rt.namespace, rt.name): {"pid": rt.proc.pid, "uid": rt.uid,
                                                    "running": not rt.exited.is_set()}
                for rt in runtimes if rt.proc is not None}

    def is_running(self, uid):
        with self._lock:
            rt = self._runtimes.get(uid)
        return rt is not None and rt.proc is not None and not rt.exited.is_set()


def _wait_group_gone(pgid, timeout=3.0):
    """Waits until no process (not even an unreaped one) is left in the group."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.02)


def _set_condition(pod, ctype, status, reason=None):
    conditions = pod.setdefault("status", {}).setdefault("conditions", [])
    cond = next((c for c in conditions if c["type"] == ctype), None)
    if cond is None:
        cond = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}
        conditions.append(cond)
    elif cond["status"] != status:
        cond["lastTransitionTime"] = now_rfc3339()
    cond["status"] = status
    if reason:
        cond["reason"] = reason
    else:
        cond.pop("reason", None)

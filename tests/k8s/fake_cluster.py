"""Starts tests/k8s/fake_apiserver.py for a test and talks to it with urllib (standard library only)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "fake_apiserver.py")

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: http://127.0.0.1:{port}
users:
- name: tester
  user:
    token: {token}
contexts:
- name: fake
  context:
    cluster: fake
    user: tester
    namespace: default
current-context: fake
"""


class FakeCluster:
    """One fake API server process, with its state directory and a kubeconfig for it."""

    def __init__(self, kubelet=True, token="test-token", extra_args=(), lifetime_s=180):
        self.token = token
        self.state_dir = tempfile.mkdtemp(prefix="fake-k8s-")
        self.kubeconfig = os.path.join(self.state_dir, "kubeconfig")
        args = [sys.executable, SERVER, "--port", "0", "--state-dir", self.state_dir,
                "--max-lifetime-s", str(lifetime_s)]
        if kubelet:
            args.append("--kubelet")
        if token:
            args += ["--token", token]
        self._stderr = open(os.path.join(self.state_dir, "server.log"), "wb")
        self.proc = subprocess.Popen(args + list(extra_args), stdout=self._stderr, stderr=self._stderr)
        self.port = self._wait_for_port()
        self.base = "http://127.0.0.1:%d" % self.port
        with open(self.kubeconfig, "w") as f:
            f.write(KUBECONFIG.format(port=self.port, token=token or "unused"))

    def _wait_for_port(self):
        path = os.path.join(self.state_dir, "port")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if os.path.exists(path):
                with open(path) as f:
                    return int(f.read())
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("the fake API server did not start:\n" + self.server_log())

    def server_log(self):
        with open(os.path.join(self.state_dir, "server.log"), errors="replace") as f:
            return f.read()

    def stop(self):
        """SIGTERM (the fake then terminates its pods), SIGKILL if it does not exit in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()
        return self.proc.returncode

    def stop_and_check(self):
        """Stops the fake, removes its files, and fails if it exited badly or hit an
        unexpected exception (printing the end of its log)."""
        rc = self.stop()
        log = self.server_log()
        self.cleanup()
        if rc != 0 or "Traceback" in log:
            print(log[-6000:], file=sys.stderr)
        assert rc == 0, "the fake API server exited with %s" % rc
        assert "Traceback" not in log, "the fake API server hit an unexpected exception (log above)"

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    # ---- HTTP
    def request(self, method, path, body=None, content_type="application/json", timeout=10, token=True):
        """(status, parsed JSON body or text, headers); HTTP errors are returned, not raised."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if token and self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, _parse(resp.read()), resp.headers
        except urllib.error.HTTPError as e:
            return e.code, _parse(e.read()), e.headers

    def control(self, method, path, body=None):
        status, reply, _ = self.request(method, "/_fake/" + path, body)
        if status != 200:
            raise AssertionError("/_fake/%s: %s %s" % (path, status, reply))
        return reply

    def open_watch(self, path, timeout=15):
        return WatchStream(self.port, path, self.token, timeout)


class WatchStream:
    """A watch read off a raw socket, so that a stream cut short (no terminating chunk) is told apart
    from one that ended cleanly: next_event() returns None at a clean end and raises ConnectionError
    when the stream was cut."""

    def __init__(self, port, path, token, timeout):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        auth = "Authorization: Bearer %s\r\n" % token if token else ""
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n" % (path, port, auth)).encode())
        self.file = self.sock.makefile("rb")
        self.status = int(self.file.readline().split()[1])
        self.headers = {}
        while True:
            line = self.file.readline().decode().strip()
            if not line:
                break
            key, _, value = line.partition(":")
            self.headers[key.strip().lower()] = value.strip()
        self._buffer = b""

    def _chunk(self):
        line = self.file.readline()
        if not line:
            raise ConnectionError("watch stream cut: no terminating chunk")
        size = int(line.split(b";")[0], 16)
        if size == 0:
            self.file.readline()
            return None
        data = self.file.read(size + 2)
        if len(data) < size + 2:
            raise ConnectionError("watch stream cut inside a chunk")
        return data[:size]

    def next_event(self):
        while b"\n" not in self._buffer:
            chunk = self._chunk()
            if chunk is None:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        self.file.close()
        self.sock.close()


def read_event(stream):
    return stream.next_event()


def _parse(raw):
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def pod_manifest(name=None, generate_name=None, labels=None, command=None, env=None, grace=5, namespace=None):
    meta = {"labels": labels or {}}
    if name:
        meta["name"] = name
    if generate_name:
        meta["generateName"] = generate_name
    if namespace:
        meta["namespace"] = namespace
    container = {"name": "main", "image": "busybox:1.36", "command": command or ["sleep", "300"]}
    if env:
        container["env"] = env
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"terminationGracePeriodSeconds": grace, "restartPolicy": "Never", "containers": [container]}}


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is gone for our purposes; /proc says which.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(predicate, timeout=10.0, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out after %.0fs waiting for %s" % (timeout, what))

#!/usr/bin/python3
"""The fake kubelet under load: every deleted pod must be gone within its grace period plus a margin,
and its processes with it.

1. In this process, a kubelet whose threads sometimes cannot be started ("can't start new thread",
   as when the machine runs out of processes or memory) and whose event handling sometimes raises:
   it must log each failure with its traceback and carry on.
2. A fake API server: many pods are created and deleted gracefully at once, at every stage of their
   life (before they are bound, while they start, while they run), some ignoring SIGTERM, some deleted
   twice, while faults are set and cleared, watches are cut, the history is compacted and the counters
   reset, as k8s_autoscaler_test.sh does. The fake must log no exception.

  fake_kubelet_stress_test.py [--seconds S] [--workers N] [--seed N] [--start-delay-ms MS]
"""

import argparse
import contextlib
import faulthandler
import io
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
import warnings

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_cluster import FakeCluster, pid_alive, pod_manifest  # noqa: E402
from fakek8s import errors  # noqa: E402
from fakek8s.api import Api  # noqa: E402
from fakek8s.kubelet import FakeKubelet  # noqa: E402
from fakek8s.resources import Registry  # noqa: E402
from fakek8s.store import Store  # noqa: E402
from fakek8s.watch import WatchHub  # noqa: E402

NS = "stress"
PODS = "/api/v1/namespaces/%s/pods" % NS
# What k8s_autoscaler_test.sh sets; the chaos thread also clears it, cuts watches and compacts.
FAULTS = {"lose_create_reply_every": 3,
          "status_every": [{"code": 500, "every": 4, "verbs": ["create", "list"]}],
          "drop_watches_after_events": 4}
POLITE = ["sh", "-c", 'trap "exit 0" TERM; sleep 60 & wait']
STUBBORN = ["sh", "-c", "trap '' TERM; sleep 60 & wait; wait"]   # only SIGKILL ends it
MARGIN_S = 5.0   # after the grace period: the kubelet's SIGKILL, its wait for the group, a slow machine


class Stress:
    def __init__(self, fake, seconds, workers, seed):
        self.fake, self.seconds, self.workers = fake, seconds, workers
        self.rng = random.Random(seed)
        self.run = uuid.uuid4().hex[:8]
        self.lock = threading.Lock()
        self.deleted = {}      # name -> (uid, when deleted, grace period, pid of its process or None)
        self.errors = []
        self.counts = {"created": 0, "lost_replies": 0, "deleted": 0, "stubborn": 0, "running_when_deleted": 0}
        self.stop = threading.Event()
        self.injected = {}     # what the faults did, over every setting of them
        self.slowest = 0.0     # the longest a deleted pod took to go, beyond its grace period

    def error(self, text):
        with self.lock:
            self.errors.append(text)

    def count(self, key):
        with self.lock:
            self.counts[key] += 1

    # ---- one client: create, maybe wait, delete
    def create(self, stubborn, grace):
        """The new pod (name, uid), finding it by its label when the reply was lost or a 500 came."""
        tag = uuid.uuid4().hex[:10]
        body = pod_manifest(generate_name="s-", labels={"run": self.run, "tag": tag},
                            command=STUBBORN if stubborn else POLITE, grace=grace, namespace=NS)
        for _ in range(20):
            try:
                status, reply, _ = self.fake.request("POST", PODS, body, timeout=10)
            except OSError:   # the reply was lost (the connection closed): the pod may exist
                status, reply = None, None
                self.count("lost_replies")
            if status == 201:
                return reply["metadata"]["name"], reply["metadata"]["uid"]
            if status not in (None, 500):
                self.error("create: %s %s" % (status, reply))
                return None
            found = self.find(tag)
            if found:
                return found
            time.sleep(0.05)
        self.error("create: no pod after 20 tries")
        return None

    def find(self, tag):
        query = "?labelSelector=" + urllib.parse.quote("run=%s,tag=%s" % (self.run, tag))
        for _ in range(20):
            status, reply, _ = self.fake.request("GET", PODS + query)
            if status == 200:
                items = reply["items"]
                return (items[0]["metadata"]["name"], items[0]["metadata"]["uid"]) if items else None
            time.sleep(0.05)
        return None

    def pid(self, name):
        return self.fake.control("GET", "processes").get("%s/%s" % (NS, name), {}).get("pid")

    def delete(self, rng, name, uid, grace):
        pid = self.pid(name)
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": grace,
                   "propagationPolicy": "Background", "preconditions": {"uid": uid}}
        now = time.monotonic()
        status, reply, _ = self.fake.request("DELETE", PODS + "/" + name, options)
        if status not in (200, 404):
            self.error("delete %s: %s %s" % (name, status, reply))
        with self.lock:
            self.deleted[name] = (uid, now, grace, pid)
        self.count("deleted")
        if pid:
            self.count("running_when_deleted")
        if rng.random() < 0.2:   # a client retrying its delete (the same or a shorter grace)
            status, reply, _ = self.fake.request("DELETE", PODS + "/" + name, dict(
                options, gracePeriodSeconds=rng.choice([grace, max(grace - 1, 0)])))
            if status not in (200, 404, 409):
                self.error("second delete %s: %s %s" % (name, status, reply))

    def client(self, index):
        rng = random.Random(self.rng.random() + index)
        while not self.stop.is_set():
            stubborn = rng.random() < 0.15
            grace = rng.choice([1, 2, 3]) if stubborn else rng.choice([0, 1, 2, 3, 30])
            created = self.create(stubborn, grace)
            if not created:
                continue
            self.count("created")
            if stubborn:
                self.count("stubborn")
            name, uid = created
            time.sleep(rng.choice([0, 0, 0.005, 0.02, 0.05, 0.1, 0.3, 0.8]))
            self.delete(rng, name, uid, grace)

    # ---- the rest of the cluster: watchers and the chaos the autoscaler test makes
    def watcher(self):
        rv = "0"
        while not self.stop.is_set():
            path = (PODS + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=5&labelSelector="
                    + urllib.parse.quote("run=" + self.run) + "&resourceVersion=" + rv)
            try:
                stream = self.fake.open_watch(path, timeout=10)
                while not self.stop.is_set():
                    event = stream.next_event()
                    if event is None:
                        break
                    if event["type"] == "ERROR":   # 410 after a compaction: start over
                        rv = "0"
                        break
                    rv = event["object"]["metadata"].get("resourceVersion", rv)
                stream.close()
            except (OSError, ValueError):
                pass   # cut by a fault: resume from rv

    def chaos(self):
        """Over and over: the autoscaler test's faults, cut watches, a stats reset, a compaction, no faults."""
        rng = random.Random(self.rng.random())
        cycle = [("POST", "faults", FAULTS), ("POST", "drop_watches", None), ("DELETE", "stats", None),
                 ("POST", "compact", None), ("POST", "drop_watches", None), ("DELETE", "faults", None)]
        while True:
            for method, path, body in cycle:
                if self.stop.wait(rng.uniform(0.05, 0.3)):
                    self.tally_faults()
                    self.fake.control("DELETE", "faults")
                    return
                if path == "faults":   # setting or clearing faults resets their counters: keep them
                    self.tally_faults()
                self.fake.control(method, path, body)

    def tally_faults(self):
        injected = self.fake.control("GET", "faults")["injected"]
        with self.lock:
            for key, n in injected.items():
                self.injected[key] = self.injected.get(key, 0) + n

    # ---- the check
    def overdue(self):
        """Forgets the deleted pods that are gone (process included); describes those past their deadline."""
        with self.lock:
            pending = dict(self.deleted)
        late = []
        for name, (uid, deleted_at, grace, pid) in pending.items():
            status, reply, _ = self.fake.request("GET", PODS + "/" + name)
            gone = status == 404 or (status == 200 and reply["metadata"]["uid"] != uid)
            alive = pid is not None and pid_alive(pid)
            now = time.monotonic()
            if gone and not alive:
                with self.lock:
                    self.deleted.pop(name, None)
                    self.slowest = max(self.slowest, now - deleted_at - grace)
            elif now >= deleted_at + grace + MARGIN_S:
                late.append("%s (grace %ds): %s, its process %s, %.1fs after the delete" % (
                    name, grace, "still there: %s" % json.dumps(reply.get("metadata")) if not gone else "gone",
                    "alive" if alive else "gone", now - deleted_at))
        return late

    def run_all(self):
        threads = [threading.Thread(target=self.client, args=(i,), daemon=True) for i in range(self.workers)]
        threads += [threading.Thread(target=self.watcher, daemon=True) for _ in range(3)]
        threads.append(threading.Thread(target=self.chaos, daemon=True))
        for t in threads:
            t.start()
        end, late = time.monotonic() + self.seconds, []
        while time.monotonic() < end and not late:
            time.sleep(0.5)
            late = self.overdue()
        self.stop.set()
        for t in threads:
            t.join(15)
        # Every pod deleted so far must go by its deadline.
        while not late:
            with self.lock:
                if not self.deleted:
                    break
            time.sleep(0.2)
            late = self.overdue()
        return late


def failing_kubelet_check(rng):
    """Part 1: every 3rd worker thread of the kubelet fails to start and every 4th event it handles
    raises; pods must still start, and every deleted pod must still go in time."""
    registry, store = Registry(), Store(WatchHub(1000))
    state_dir = tempfile.mkdtemp(prefix="fake-kubelet-")
    kubelet = FakeKubelet(store, registry, state_dir)
    api = Api(registry, store, kubelet)
    api.bootstrap()
    pods = registry.by_name("pods")
    real_start, real_handle, calls = threading.Thread.start, FakeKubelet._handle, {"start": 0, "handle": 0}

    def flaky_start(thread):
        if thread.name.startswith("pod-"):
            calls["start"] += 1
            if calls["start"] % 3 == 0:
                raise RuntimeError("can't start new thread (injected)")
        return real_start(thread)

    def flaky_handle(self, kind, pod):
        calls["handle"] += 1
        if calls["handle"] % 4 == 0:
            raise RuntimeError("an injected error handling a %s event" % kind)
        return real_handle(self, kind, pod)

    def gone(name, uid):
        try:
            return api.get(pods, "default", name)["metadata"]["uid"] != uid
        except errors.ApiError:
            return True

    log, problems, began = io.StringIO(), [], time.monotonic()
    threading.Thread.start, FakeKubelet._handle = flaky_start, flaky_handle
    try:
        with contextlib.redirect_stderr(log):
            kubelet.start(0)
            made = []
            for i in range(12):
                stubborn = i % 5 == 0
                body = pod_manifest(generate_name="f-", command=STUBBORN if stubborn else POLITE, grace=1)
                pod = api.create(pods, "default", json.dumps(body).encode(), {}, "application/json").body
                made.append((pod["metadata"]["name"], pod["metadata"]["uid"]))
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and len(kubelet.processes()) < len(made):
                time.sleep(0.1)
            if len(kubelet.processes()) < len(made):
                problems.append("only %d of %d pods started" % (len(kubelet.processes()), len(made)))
            pids = {key.split("/")[1]: proc["pid"] for key, proc in kubelet.processes().items()}
            deleted = {}
            for name, uid in made:
                api.delete(pods, "default", name, b'{"gracePeriodSeconds": 1}', {})
                deleted[name] = (uid, time.monotonic() + 1 + MARGIN_S)
            while deleted:
                for name, (uid, deadline) in list(deleted.items()):
                    if gone(name, uid) and not (name in pids and pid_alive(pids[name])):
                        del deleted[name]
                    elif time.monotonic() > deadline:
                        problems.append("pod %s not gone %.0fs after its grace period" % (name, MARGIN_S))
                        del deleted[name]
                time.sleep(0.1)
    finally:
        threading.Thread.start, FakeKubelet._handle = real_start, real_handle
        kubelet.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
    text = log.getvalue()
    if "can't start new thread (injected)" not in text or "an injected error" not in text:
        problems.append("the injected failures were not logged")
    if text.count("Traceback") != text.count("fake-kubelet:"):
        problems.append("a failure was logged without its traceback, or an exception escaped")
    print("part 1, %.1fs: %d pods, %d worker starts failed, %d events failed; %s" % (
        time.monotonic() - began, len(made), calls["start"] // 3, calls["handle"] // 4,
        "FAIL" if problems else "ok"))
    if problems:
        print(text[-4000:], file=sys.stderr)
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=4.0, help="how long pods are made and deleted (part 2)")
    p.add_argument("--workers", type=int, default=6, help="clients creating and deleting pods at once")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--start-delay-ms", type=int, default=0, help="the kubelet's --kubelet-start-delay-ms")
    args = p.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print("seed %d" % seed)
    faulthandler.dump_traceback_later(args.seconds + 90, exit=True)   # a hard bound: never hang a test run
    warnings.simplefilter("ignore", ResourceWarning)
    problems = failing_kubelet_check(random.Random(seed))
    if problems:
        for line in problems:
            print("FAIL:", line, file=sys.stderr)
        return 1
    fake = FakeCluster(lifetime_s=args.seconds + 120,
                       extra_args=["--kubelet-start-delay-ms", str(args.start_delay_ms)])
    try:
        status, body, _ = fake.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        assert status == 201, body
        stress = Stress(fake, args.seconds, args.workers, seed)
        start = time.monotonic()
        late = stress.run_all()
        print("part 2, %.1fs: %s; slowest deletion %.1fs past its grace period; injected %s" % (
            time.monotonic() - start, stress.counts, stress.slowest, stress.injected))
    except BaseException:
        fake.cleanup()
        raise
    problems = stress.errors + late
    if stress.counts["deleted"] < 20 or stress.counts["running_when_deleted"] < 5:
        problems.append("too little happened: %s" % stress.counts)
    if not all(stress.injected.get(k) for k in ("lost_replies", "status_500", "dropped_watches", "compactions")):
        problems.append("a fault never fired: %s" % stress.injected)
    if problems:
        print(fake.server_log()[-6000:], file=sys.stderr)
        fake.cleanup()
        for line in problems[:30]:
            print("FAIL:", line, file=sys.stderr)
        return 1
    fake.stop_and_check()
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())

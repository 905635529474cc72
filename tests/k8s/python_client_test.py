#!/usr/bin/python3
"""The official Python client (Debian's python3-kubernetes) against the fake API server with its kubelet:
what a controller written with it sees, from create to watch to delete, and the errors it gets."""

import faulthandler
import os
import sys
import time
import unittest
import uuid
import warnings

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kubernetes import client, config, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

from fake_cluster import FakeCluster, pid_alive, pod_manifest, wait_until  # noqa: E402

NS = "pyclient"


class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The kubelet waits a little before it starts a pod, as a scheduler and an image pull would.
        cls.fake = FakeCluster(extra_args=["--kubelet-start-delay-ms", "200"])
        cls.api_client = config.new_client_from_config(config_file=cls.fake.kubeconfig)
        cls.core = client.CoreV1Api(cls.api_client)
        cls.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
        cls.core.create_namespaced_secret(NS, client.V1Secret(
            metadata=client.V1ObjectMeta(name="orb-token"), string_data={"token": "s3cret"}))

    @classmethod
    def tearDownClass(cls):
        cls.api_client.close()
        cls.fake.stop_and_check()

    def watch_events(self, until, timeout_s=20, **kwargs):
        """Events of a pod watch in NS until until(event) is true; fails on timeout."""
        seen, w = [], watch.Watch()
        deadline = time.monotonic() + timeout_s
        for event in w.stream(self.core.list_namespaced_pod, NS, timeout_seconds=timeout_s, **kwargs):
            seen.append(event)
            if until(event) or time.monotonic() > deadline:
                w.stop()
                break
        self.assertTrue(seen and until(seen[-1]),
                        "watch ended without the expected event; saw %s" % [(e["type"], e["object"].status.phase)
                                                                           for e in seen])
        return seen

    def new_pod(self, run, command):
        body = pod_manifest(generate_name="orb-worker-", labels={"app": "orb", "run": run}, command=command, env=[
            {"name": "ORB_TOKEN", "valueFrom": {"secretKeyRef": {"name": "orb-token", "key": "token"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}])
        return self.core.create_namespaced_pod(NS, body)

    def test_pod_lifecycle_seen_through_list_watch_and_delete(self):
        run = uuid.uuid4().hex[:8]
        before = self.core.list_namespaced_pod(NS).metadata.resource_version
        pod = self.new_pod(run, ["sh", "-c", "echo token=$ORB_TOKEN name=$(POD_NAME); exec sleep 300"])
        name = pod.metadata.name
        self.assertRegex(name, r"^orb-worker-[a-z0-9]{5}$")
        self.assertEqual(pod.status.phase, "Pending")
        self.assertTrue(pod.metadata.uid and pod.metadata.resource_version and pod.metadata.creation_timestamp)

        listed = self.core.list_namespaced_pod(NS, label_selector="app=orb,run=%s" % run)
        self.assertEqual([p.metadata.name for p in listed.items], [name])
        self.assertEqual(self.core.list_namespaced_pod(NS, label_selector="run in (%s),app!=orb" % run).items, [])

        # Watching from the list's resourceVersion replays the creation, whenever the watch starts.
        events = self.watch_events(lambda e: e["object"].status.phase == "Running",
                                   label_selector="run=" + run, resource_version=before)
        self.assertEqual(events[0]["type"], "ADDED")
        self.assertEqual(events[0]["object"].status.phase, "Pending")
        self.assertIn("MODIFIED", [e["type"] for e in events[1:]])
        running = events[-1]["object"]
        self.assertEqual(running.spec.node_name, "fake-node")
        self.assertEqual(running.status.pod_ip, "127.0.0.1")
        self.assertEqual([c.type for c in running.status.conditions if c.status == "True"].count("Ready"), 1)
        self.assertIsNotNone(running.status.container_statuses[0].state.running)

        log = wait_until(lambda: self.core.read_namespaced_pod_log(name, NS), what="the pod's output")
        self.assertEqual(log.strip(), "token=s3cret name=%s" % name)
        pid = self.fake.control("GET", "processes")["%s/%s" % (NS, name)]["pid"]
        self.assertTrue(pid_alive(pid))

        patched = self.core.patch_namespaced_pod(name, NS, {"metadata": {"labels": {"phase": "two"}}})
        self.assertEqual(patched.metadata.labels, {"app": "orb", "run": run, "phase": "two"})
        self.assertEqual(len(self.core.list_namespaced_pod(NS, label_selector="phase=two").items), 1)

        deleted = self.core.delete_namespaced_pod(name, NS)
        self.assertIsNotNone(deleted.metadata.deletion_timestamp)
        self.assertEqual(deleted.metadata.deletion_grace_period_seconds, 5)
        events = self.watch_events(lambda e: e["type"] == "DELETED", label_selector="run=" + run,
                                   resource_version=patched.metadata.resource_version)
        self.assertEqual(events[-1]["object"].metadata.name, name)
        self.assertFalse(pid_alive(pid), "the pod's process outlived the pod")
        with self.assertRaises(ApiException) as ctx:
            self.core.read_namespaced_pod(name, NS)
        self.assertEqual(ctx.exception.status, 404)

    def test_finished_pod_reports_exit_code(self):
        run = uuid.uuid4().hex[:8]
        pod = self.new_pod(run, ["sh", "-c", "exit 3"])
        events = self.watch_events(lambda e: e["object"].status.phase in ("Failed", "Succeeded"),
                                   label_selector="run=" + run)
        final = events[-1]["object"]
        self.assertEqual(final.status.phase, "Failed")
        self.assertEqual(final.status.container_statuses[0].state.terminated.exit_code, 3)
        self.core.delete_namespaced_pod(pod.metadata.name, NS)   # a finished pod goes at once
        self.assertEqual(self.core.list_namespaced_pod(NS, label_selector="run=" + run).items, [])

    def test_name_conflict_is_409(self):
        body = pod_manifest(name="fixed-" + uuid.uuid4().hex[:6])
        self.core.create_namespaced_pod(NS, body)
        with self.assertRaises(ApiException) as ctx:
            self.core.create_namespaced_pod(NS, body)
        self.assertEqual(ctx.exception.status, 409)
        self.assertIn('"reason": "AlreadyExists"', ctx.exception.body)
        self.core.delete_namespaced_pod(body["metadata"]["name"], NS, grace_period_seconds=0)

    def test_invalid_pod_is_422(self):
        body = pod_manifest(name="no-image")
        del body["spec"]["containers"][0]["image"]
        with self.assertRaises(ApiException) as ctx:
            self.core.create_namespaced_pod(NS, body)
        self.assertEqual(ctx.exception.status, 422)
        self.assertIn("spec.containers[0].image: Required value", ctx.exception.body)

    def test_watch_from_compacted_resource_version_is_410(self):
        pod = self.core.create_namespaced_pod(NS, pod_manifest(name="old-" + uuid.uuid4().hex[:6]))
        old_rv = pod.metadata.resource_version
        self.core.patch_namespaced_pod(pod.metadata.name, NS, {"metadata": {"labels": {"x": "y"}}})
        self.fake.control("POST", "compact")
        # With timeout_seconds the client does not retry: the ERROR event becomes ApiException(410).
        with self.assertRaises(ApiException) as ctx:
            for _ in watch.Watch().stream(self.core.list_namespaced_pod, NS, resource_version=old_rv,
                                          timeout_seconds=5):
                pass
        self.assertEqual(ctx.exception.status, 410)
        self.assertIn("Expired", ctx.exception.reason)
        # Without it the client retries once from the same resourceVersion, then raises the same.
        with self.assertRaises(ApiException) as ctx:
            for _ in watch.Watch().stream(self.core.list_namespaced_pod, NS, resource_version=old_rv):
                pass
        self.assertEqual(ctx.exception.status, 410)
        self.core.delete_namespaced_pod(pod.metadata.name, NS, grace_period_seconds=0)

    def test_wrong_token_is_401(self):
        configuration = client.Configuration()
        configuration.host = self.fake.base
        configuration.api_key = {"authorization": "Bearer wrong"}
        with client.ApiClient(configuration) as other:
            with self.assertRaises(ApiException) as ctx:
                client.CoreV1Api(other).list_namespaced_pod(NS)
        self.assertEqual(ctx.exception.status, 401)


if __name__ == "__main__":
    faulthandler.dump_traceback_later(120, exit=True)   # a hard bound: never hang a test run
    warnings.simplefilter("ignore", ResourceWarning)     # the client leaves pooled sockets to the GC
    sys.warnoptions.append("ignore::ResourceWarning")    # ... and unittest keeps that filter
    unittest.main(verbosity=2)

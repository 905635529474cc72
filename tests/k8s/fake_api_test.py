#!/usr/bin/python3
"""Kubernetes API semantics of the fake (with its kubelet) that the client tests lean on: optimistic
concurrency, patches, subresources, selectors, paging, watch filtering, graceful deletion, the
kubelet's handling of environments and failures, and a clean stop."""

import faulthandler
import json
import os
import sys
import time
import unittest
import uuid
import warnings

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_cluster import FakeCluster, pid_alive, pod_manifest, read_event, wait_until  # noqa: E402

NS = "api"
PODS = "/api/v1/namespaces/%s/pods" % NS
MERGE = "application/merge-patch+json"


class ApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fake = FakeCluster()
        assert cls.fake.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})[0] == 201

    @classmethod
    def tearDownClass(cls):
        cls.fake.stop_and_check()

    def setUp(self):
        self.run_id = uuid.uuid4().hex[:8]

    def call(self, method, path, body=None, expect=200, content_type="application/json"):
        status, reply, _ = self.fake.request(method, path, body, content_type=content_type)
        self.assertEqual(status, expect, "%s %s -> %s" % (method, path, reply))
        return reply

    def create(self, name=None, labels=None, **kwargs):
        labels = dict(labels or {}, run=self.run_id)
        body = pod_manifest(name=name, generate_name=None if name else "p-", labels=labels, **kwargs)
        return self.call("POST", PODS, body, 201)

    def names(self, query):
        return sorted(p["metadata"]["name"] for p in self.call("GET", PODS + "?" + query)["items"])

    def wait_phase(self, name, phases=("Running",)):
        return wait_until(lambda: (lambda p: p if p["status"].get("phase") in phases else None)(
            self.call("GET", PODS + "/" + name)), what="pod %s in %s" % (name, phases))

    # ---------------------------------------------------------------- writes
    def test_put_needs_the_current_resource_version(self):
        # Read it back once the kubelet is done with it: each of its status changes is a new resourceVersion.
        pod = self.wait_phase(self.create()["metadata"]["name"])
        url = PODS + "/" + pod["metadata"]["name"]
        pod["metadata"]["labels"]["a"] = "1"
        updated = self.call("PUT", url, pod)
        self.assertGreater(int(updated["metadata"]["resourceVersion"]), int(pod["metadata"]["resourceVersion"]))
        stale = self.call("PUT", url, pod, 409)
        self.assertEqual(stale["reason"], "Conflict")
        updated["status"] = {"phase": "Succeeded"}
        self.assertNotEqual(self.call("PUT", url, updated)["status"]["phase"], "Succeeded",
                            "status is not written through the main resource")
        current = self.call("GET", url)
        current["spec"]["containers"][0]["command"] = ["true"]
        self.assertIn("pod updates may not change fields", self.call("PUT", url, current, 422)["message"])

    def test_patches(self):
        pod = self.create(labels={"a": "1", "b": "2"})
        url = PODS + "/" + pod["metadata"]["name"]
        patched = self.call("PATCH", url, [{"op": "replace", "path": "/metadata/labels/a", "value": "9"},
                                           {"op": "remove", "path": "/metadata/labels/b"},
                                           {"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}],
                            content_type="application/json-patch+json")
        self.assertEqual(patched["metadata"]["labels"], {"a": "9", "run": self.run_id})
        self.assertEqual(patched["metadata"]["annotations"], {"k": "v"})
        self.call("PATCH", url, [{"op": "test", "path": "/metadata/labels/a", "value": "0"}], 422,
                  content_type="application/json-patch+json")
        image = self.call("PATCH", url, {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}},
                          content_type="application/strategic-merge-patch+json")
        self.assertEqual(image["spec"]["containers"][0]["image"], "busybox:1.37")
        self.assertEqual(image["spec"]["containers"][0]["command"], ["sleep", "300"], "merged by name")
        self.call("PATCH", url, {"metadata": {"resourceVersion": "1"}}, 409, content_type=MERGE)
        status = self.call("PATCH", url + "/status", {"status": {"message": "hi"}, "metadata": {"labels": None}},
                           content_type=MERGE)
        self.assertEqual(status["status"]["message"], "hi")
        self.assertIn("a", status["metadata"]["labels"], "the status subresource writes status only")
        self.call("PATCH", url, {}, 415, content_type="application/apply-patch+yaml")

    def test_create_rules(self):
        pod = self.create()
        self.assertRegex(pod["metadata"]["name"], r"^p-[bcdfghjklmnpqrstvwxz2456789]{5}$")
        self.assertEqual(pod["spec"]["restartPolicy"], "Never")
        self.assertEqual(pod["spec"]["serviceAccountName"], "default")
        self.call("POST", "/api/v1/namespaces/nope/pods", pod_manifest(name="x"), 404)
        self.call("POST", PODS, pod_manifest(name="Bad_Name"), 422)
        self.call("POST", PODS, dict(pod_manifest(name="x"), metadata={"name": "x", "namespace": "other"}), 400)
        dry = self.call("POST", PODS + "?dryRun=All", pod_manifest(name="dry-" + self.run_id), 201)
        self.assertEqual(dry["metadata"]["name"], "dry-" + self.run_id)
        self.call("GET", PODS + "/dry-" + self.run_id, expect=404)

    def test_secret_string_data_and_other_resources(self):
        secret = self.call("POST", "/api/v1/namespaces/%s/secrets" % NS,
                           {"metadata": {"name": "s-" + self.run_id}, "stringData": {"k": "v"}}, 201)
        self.assertEqual(secret["data"], {"k": "dg=="})
        self.assertNotIn("stringData", secret)
        self.call("POST", "/api/v1/namespaces/%s/configmaps" % NS, {"metadata": {"name": "c"}, "data": {"a": "b"}}, 201)
        self.call("POST", "/apis/apps/v1/namespaces/%s/deployments" % NS, {"metadata": {"name": "d"}, "spec": {
            "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
                "containers": [{"name": "c", "image": "i"}]}}}}, 201)
        self.assertEqual(self.call("DELETE", "/apis/apps/v1/namespaces/%s/deployments/d" % NS)["status"], "Success")
        self.assertEqual(len(self.call("GET", "/api/v1/namespaces/%s/serviceaccounts" % NS)["items"]), 1)

    # ---------------------------------------------------------------- reads
    def test_selectors_paging_and_tables(self):
        for env in ("prod", "dev", "test"):
            self.create(name="%s-%s" % (env, self.run_id), labels={"env": env})
        self.create(name="none-" + self.run_id)
        run = "run%3D" + self.run_id
        self.assertEqual(len(self.names("labelSelector=" + run)), 4)
        self.assertEqual(self.names("labelSelector=%s,env%%20notin%%20(prod,dev)" % run),
                         ["none-" + self.run_id, "test-" + self.run_id])
        self.assertEqual(self.names("labelSelector=%s,!env" % run), ["none-" + self.run_id])
        self.assertEqual(self.names("labelSelector=%s,env!=prod,env" % run),
                         ["dev-" + self.run_id, "test-" + self.run_id])
        self.assertEqual(self.names("labelSelector=%s&fieldSelector=metadata.name%%3Dprod-%s" % (run, self.run_id)),
                         ["prod-" + self.run_id])
        first = self.call("GET", PODS + "?labelSelector=%s&limit=3" % run)
        self.assertEqual(len(first["items"]), 3)
        rest = self.call("GET", PODS + "?labelSelector=%s&limit=3&continue=%s" % (run, first["metadata"]["continue"]))
        self.assertEqual(len(rest["items"]), 1)
        self.assertNotIn("continue", rest["metadata"])
        self.assertIn("prod-" + self.run_id, [p["metadata"]["name"] for p in
                                              self.call("GET", "/api/v1/pods?labelSelector=" + run)["items"]])
        status, table, _ = self.fake.request("GET", PODS + "?labelSelector=" + run)
        self.assertEqual(table["kind"], "PodList")
        req_headers = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
        import urllib.request
        req = urllib.request.Request(self.fake.base + PODS + "?labelSelector=" + run, headers=dict(
            req_headers, Authorization="Bearer " + self.fake.token))
        with urllib.request.urlopen(req, timeout=10) as resp:
            table = json.loads(resp.read())
        self.assertEqual(table["kind"], "Table")
        self.assertEqual([c["name"] for c in table["columnDefinitions"]][:3], ["Name", "Ready", "Status"])
        self.assertEqual(len(table["rows"]), 4)
        deleted = self.call("DELETE", PODS + "?labelSelector=%s,env" % run)
        self.assertEqual(len(deleted["items"]), 3)

    def test_watch_reports_objects_leaving_the_selection(self):
        pod = self.wait_phase(self.create(labels={"sel": "yes"})["metadata"]["name"])   # the kubelet is done
        url = PODS + "/" + pod["metadata"]["name"]
        stream = self.fake.open_watch(PODS + "?watch=1&labelSelector=sel%3Dyes,run%3D" + self.run_id
                                      + "&timeoutSeconds=20&allowWatchBookmarks=true&sendInitialEvents=true"
                                      "&resourceVersionMatch=NotOlderThan")
        self.assertEqual(read_event(stream)["type"], "ADDED")
        bookmark = read_event(stream)
        self.assertEqual(bookmark["type"], "BOOKMARK")
        self.assertEqual(bookmark["object"]["metadata"]["annotations"], {"k8s.io/initial-events-end": "true"})
        self.call("PATCH", url, {"metadata": {"labels": {"sel": "no"}}}, content_type=MERGE)
        self.assertEqual(read_event(stream)["type"], "DELETED", "an object that stops matching is DELETED")
        self.call("PATCH", url, {"metadata": {"labels": {"sel": "yes"}}}, content_type=MERGE)
        self.assertEqual(read_event(stream)["type"], "ADDED")
        stream.close()

    # ---------------------------------------------------------------- kubelet
    def test_graceful_delete_waits_for_the_process(self):
        pod = self.create(command=["sh", "-c", "trap 'sleep 1; exit 0' TERM; echo up; sleep 300 & wait"], grace=10)
        name = pod["metadata"]["name"]
        self.wait_phase(name)
        wait_until(lambda: self.call("GET", PODS + "/%s/log" % name) == "up\n", what="output")
        pid = self.fake.control("GET", "processes")["%s/%s" % (NS, name)]["pid"]
        deleting = self.call("DELETE", PODS + "/" + name)
        self.assertEqual(deleting["metadata"]["deletionGracePeriodSeconds"], 10)
        self.assertEqual(self.call("GET", PODS + "/" + name)["metadata"]["deletionGracePeriodSeconds"], 10,
                         "the pod stays while its process handles SIGTERM")
        wait_until(lambda: self.fake.request("GET", PODS + "/" + name)[0] == 404, what="pod gone")
        self.assertFalse(pid_alive(pid))

    def test_grace_zero_and_sigkill_after_grace(self):
        stubborn = self.create(command=["sh", "-c", "trap '' TERM; echo trapped; sleep 300 & wait; wait"], grace=1)
        name = stubborn["metadata"]["name"]
        self.wait_phase(name)
        # Running is set at exec; the shell ignores SIGTERM only once it has run `trap`.
        wait_until(lambda: "trapped" in self.call("GET", PODS + "/%s/log" % name), what="the trap set")
        start = time.monotonic()
        self.call("DELETE", PODS + "/" + name)
        wait_until(lambda: self.fake.request("GET", PODS + "/" + name)[0] == 404, what="pod gone")
        self.assertGreaterEqual(time.monotonic() - start, 0.9, "SIGKILL only after the grace period")
        now = self.create()
        self.wait_phase(now["metadata"]["name"])
        self.call("DELETE", PODS + "/" + now["metadata"]["name"], {"gracePeriodSeconds": 0})
        self.call("GET", PODS + "/" + now["metadata"]["name"], expect=404)

    def test_environment_expansion_and_config_errors(self):
        secret = "late-" + self.run_id
        pod = self.create(command=["sh", "-c", "echo $(GREETING) '$(UNSET)' '$$(ESCAPED)' $SECRET $LABEL"], env=[
            {"name": "WHO", "value": "world"}, {"name": "GREETING", "value": "hello-$(WHO)"},
            {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": secret, "key": "k"}}},
            {"name": "LABEL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['run']"}}}])
        name = pod["metadata"]["name"]
        waiting = wait_until(lambda: (lambda s: s[0]["state"].get("waiting") if s else None)(
            self.call("GET", PODS + "/" + name)["status"].get("containerStatuses")), what="waiting state")
        self.assertEqual(waiting["reason"], "CreateContainerConfigError")
        self.assertEqual(waiting["message"], 'secret "%s" not found' % secret)
        self.assertEqual(self.call("GET", PODS + "/" + name)["status"]["phase"], "Pending")
        self.call("GET", PODS + "/%s/log" % name, expect=400)
        self.call("POST", "/api/v1/namespaces/%s/secrets" % NS, {"metadata": {"name": secret},
                                                                  "stringData": {"k": "s3"}}, 201)
        self.wait_phase(name, ("Succeeded",))
        self.assertEqual(self.call("GET", PODS + "/%s/log" % name),
                         "hello-world $(UNSET) $(ESCAPED) s3 %s\n" % self.run_id)

    def test_pod_without_command_fails(self):
        body = pod_manifest(name="nocmd-" + self.run_id)
        del body["spec"]["containers"][0]["command"]
        self.call("POST", PODS, body, 201)
        failed = self.wait_phase(body["metadata"]["name"], ("Failed",))
        self.assertEqual(failed["status"]["containerStatuses"][0]["state"]["terminated"]["reason"], "StartError")

    def test_stopping_the_fake_ends_its_pods(self):
        other = FakeCluster(token=None)
        try:
            other.request("POST", "/api/v1/namespaces/default/pods",
                          pod_manifest(name="p", command=["sh", "-c", "trap '' TERM; sleep 300"], grace=2))
            pid = wait_until(lambda: other.control("GET", "processes").get("default/p", {}).get("pid"),
                             what="the pod's process")
            start = time.monotonic()
            self.assertEqual(other.stop(), 0)
            self.assertFalse(pid_alive(pid), "the pod's process outlived the fake")
            self.assertLess(time.monotonic() - start, 8)
        finally:
            other.cleanup()


if __name__ == "__main__":
    faulthandler.dump_traceback_later(120, exit=True)   # a hard bound: never hang a test run
    warnings.simplefilter("ignore", ResourceWarning)
    sys.warnoptions.append("ignore::ResourceWarning")
    unittest.main(verbosity=2)

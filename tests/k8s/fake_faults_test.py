#!/usr/bin/python3
"""Each fault of the fake API server's /_fake/faults endpoint does what it says, seen from a plain HTTP
client: what a node provider would observe (a lost reply, an error code, a cut watch, a 410)."""

import faulthandler
import http.client
import json
import os
import socket
import sys
import time
import unittest
import uuid
import warnings

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_cluster import FakeCluster, pod_manifest, read_event  # noqa: E402

NS = "faults"
PODS = "/api/v1/namespaces/%s/pods" % NS


class FaultsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fake = FakeCluster(kubelet=False)
        status, body, _ = cls.fake.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        assert status == 201, body

    @classmethod
    def tearDownClass(cls):
        cls.fake.stop_and_check()

    def setUp(self):
        self.fake.control("DELETE", "faults")
        self.run_id = uuid.uuid4().hex[:8]

    def create_pod(self, timeout=10, **kwargs):
        body = pod_manifest(generate_name="w-", labels={"run": self.run_id}, **kwargs)
        return self.fake.request("POST", PODS, body, timeout=timeout)

    def pods_of_run(self):
        status, body, _ = self.fake.request("GET", PODS + "?labelSelector=run%3D" + self.run_id)
        self.assertEqual(status, 200, body)
        return [p["metadata"]["name"] for p in body["items"]]

    def creates_carried_out(self):
        return self.fake.control("GET", "stats")["completed"].get("pods", {}).get("create", 0)

    # ---------------------------------------------------------------- lost replies
    def test_lost_create_reply_close(self):
        self.fake.control("POST", "faults", {"lose_create_reply_every": 2})
        before = self.creates_carried_out()
        self.assertEqual(self.create_pod()[0], 201)
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
            self.create_pod()
        self.assertEqual(self.create_pod()[0], 201)
        # The reply was lost, the pod was not: a client that retried blindly would now have 4 pods.
        self.assertEqual(len(self.pods_of_run()), 3)
        self.assertEqual(self.creates_carried_out() - before, 3)
        self.assertEqual(self.fake.control("GET", "faults")["injected"]["lost_replies"], 1)

    def test_lost_create_reply_hang(self):
        self.fake.control("POST", "faults", {"lose_create_reply_every": 1, "lose_mode": "hang", "lose_hang_s": 5})
        start = time.monotonic()
        with self.assertRaises((socket.timeout, TimeoutError)):
            self.create_pod(timeout=1)
        self.assertLess(time.monotonic() - start, 4)
        self.assertEqual(len(self.pods_of_run()), 1)

    # ---------------------------------------------------------------- status codes
    def test_every_nth_create_is_500_and_not_carried_out(self):
        self.fake.control("POST", "faults", {"status_every": {"code": 500, "every": 2, "verbs": ["create"]}})
        codes = [self.create_pod()[0] for _ in range(4)]
        self.assertEqual(codes, [201, 500, 201, 500])
        status, body, _ = self.create_pod()
        self.assertEqual(status, 201)
        status, body, _ = self.create_pod()
        self.assertEqual((body["kind"], body["status"], body["reason"], body["code"]),
                         ("Status", "Failure", "InternalError", 500))
        self.assertEqual(len(self.pods_of_run()), 3)
        self.assertEqual(self.fake.control("GET", "faults")["injected"]["status_500"], 3)

    def test_429_carries_retry_after(self):
        self.fake.control("POST", "faults", {"status_every": {"code": 429, "every": 1, "verbs": ["list"]}})
        status, body, headers = self.fake.request("GET", PODS)
        self.assertEqual(status, 429)
        self.assertEqual(headers["Retry-After"], "1")
        self.assertEqual(body["reason"], "TooManyRequests")
        self.assertEqual(body["details"]["retryAfterSeconds"], 1)
        self.assertEqual(self.create_pod()[0], 201, "a rule for list must not touch create")

    def test_several_rules(self):
        self.assertEqual(self.create_pod()[0], 201)
        name = self.pods_of_run()[0]
        self.fake.control("POST", "faults", {"status_every": [
            {"code": 403, "every": 1, "verbs": ["delete"], "times": 1},
            {"code": 409, "every": 1, "verbs": ["patch"]}]})
        status, body, _ = self.fake.request("DELETE", PODS + "/" + name)
        self.assertEqual((status, body["reason"]), (403, "Forbidden"))
        status, body, _ = self.fake.request("PATCH", PODS + "/" + name, {"metadata": {"labels": {"a": "b"}}},
                                            content_type="application/merge-patch+json")
        self.assertEqual((status, body["reason"]), (409, "Conflict"))
        self.assertEqual(self.fake.request("DELETE", PODS + "/" + name)[0], 200, "times=1 spent")
        self.assertEqual(self.pods_of_run(), [])

    def test_slow_replies(self):
        self.fake.control("POST", "faults", {"slow_ms": 800, "slow_verbs": ["list"]})
        start = time.monotonic()
        self.pods_of_run()
        self.assertGreaterEqual(time.monotonic() - start, 0.8)
        start = time.monotonic()
        self.assertEqual(self.create_pod()[0], 201)
        self.assertLess(time.monotonic() - start, 0.5)

    def test_bad_fault_config_is_rejected(self):
        for bad in ({"lose_create_reply_evry": 2}, {"status_every": {"code": 418}}, {"lose_mode": "x"}):
            status, body, _ = self.fake.request("POST", "/_fake/faults", bad)
            self.assertEqual(status, 400, bad)

    # ---------------------------------------------------------------- watches
    def watch(self, query):
        return self.fake.open_watch(PODS + "?watch=true&labelSelector=run%3D" + self.run_id + query)

    def test_dropped_watch_is_cut_without_clean_end(self):
        resp = self.watch("&timeoutSeconds=30")
        self.assertEqual(self.create_pod()[0], 201)
        self.assertEqual(read_event(resp)["type"], "ADDED")
        self.assertGreaterEqual(self.fake.control("POST", "drop_watches")["dropped"], 1)
        with self.assertRaises(ConnectionError):
            while read_event(resp) is not None:
                pass

    def test_watch_dropped_after_n_events(self):
        for _ in range(3):
            self.assertEqual(self.create_pod()[0], 201)
        self.fake.control("POST", "faults", {"drop_watches_after_events": 2})
        resp = self.watch("&timeoutSeconds=30")
        events = []
        with self.assertRaises(ConnectionError):
            while True:
                event = read_event(resp)
                if event is None:
                    break
                events.append(event)
        self.assertEqual([e["type"] for e in events], ["ADDED", "ADDED"])
        self.assertGreaterEqual(self.fake.control("GET", "faults")["injected"]["dropped_watches"], 1)

    def test_watch_ends_cleanly_at_timeout(self):
        start = time.monotonic()
        resp = self.watch("&timeoutSeconds=1")
        self.assertIsNone(read_event(resp), "a clean end: the terminating chunk")
        self.assertLess(time.monotonic() - start, 3)

    def test_410_after_compaction(self):
        status, pod, _ = self.create_pod()
        old_rv = pod["metadata"]["resourceVersion"]
        self.fake.request("PATCH", PODS + "/" + pod["metadata"]["name"], {"metadata": {"labels": {"x": "1"}}},
                          content_type="application/merge-patch+json")
        resp = self.watch("&resourceVersion=%s&timeoutSeconds=10" % old_rv)
        self.assertEqual(read_event(resp)["type"], "MODIFIED", "the history is kept before compaction")
        resp.close()
        current = self.fake.control("POST", "compact")["resourceVersion"]
        resp = self.watch("&resourceVersion=%s&timeoutSeconds=10" % old_rv)
        self.assertEqual(resp.status, 200)
        event = read_event(resp)
        self.assertEqual(event["type"], "ERROR")
        self.assertEqual({k: event["object"][k] for k in ("kind", "status", "reason", "code")},
                         {"kind": "Status", "status": "Failure", "reason": "Expired", "code": 410})
        self.assertIsNone(read_event(resp), "the stream ends after the ERROR event")
        # From the current resourceVersion the watch works.
        resp = self.watch("&resourceVersion=%s&timeoutSeconds=10" % current)
        self.fake.request("DELETE", PODS + "/" + pod["metadata"]["name"])
        self.assertEqual(read_event(resp)["type"], "DELETED")

    def test_expire_history_fault(self):
        status, pod, _ = self.create_pod()
        self.create_pod()
        self.fake.control("POST", "faults", {"expire_history": True})
        resp = self.watch("&resourceVersion=%s&timeoutSeconds=5" % pod["metadata"]["resourceVersion"])
        self.assertEqual(read_event(resp)["object"]["code"], 410)

    # ---------------------------------------------------------------- robustness and counters
    def test_bad_input_gets_status_errors_and_the_server_lives_on(self):
        cases = [("POST", PODS, b"{not json", "application/json", 400),
                 ("POST", PODS, b"[1, 2]", "application/json", 400),
                 ("POST", PODS, json.dumps({"kind": "Pod", "apiVersion": "v1", "spec": {"containers": "x"}}).encode(),
                  "application/json", 400),
                 ("POST", PODS, b"{}", "application/json", 422),
                 ("POST", PODS, b"\x00\x01", "application/vnd.kubernetes.protobuf", 415),
                 ("GET", PODS + "?labelSelector=a%20in%20(b", None, None, 400),
                 ("GET", PODS + "?fieldSelector=spec.bogus%3D1", None, None, 400),
                 ("PATCH", PODS + "/nope", b"{}", "application/merge-patch+json", 404),
                 ("PATCH", PODS + "/nope", b"{}", "text/plain", 415),
                 ("GET", "/api/v1/namespaces/faults/widgets", None, None, 404),
                 ("GET", "/nothing/here", None, None, 404)]
        for method, path, body, ctype, code in cases:
            status, reply, _ = self.fake.request(method, path, body, content_type=ctype or "application/json")
            self.assertEqual(status, code, (method, path, body, reply))
            self.assertEqual((reply["kind"], reply["code"]), ("Status", code))
        self.assertEqual(self.fake.request("GET", "/version")[0], 200)

    def test_unauthorized_without_token(self):
        status, body, _ = self.fake.request("GET", PODS, token=False)
        self.assertEqual((status, body["reason"]), (401, "Unauthorized"))

    def test_stats_count_requests_by_verb(self):
        self.fake.control("DELETE", "stats")
        self.create_pod()
        self.pods_of_run()
        self.pods_of_run()
        stats = self.fake.control("GET", "stats")
        self.assertEqual(stats["requests"], {"create": 1, "list": 2})
        self.assertEqual(stats["requests_by_resource"]["pods"], {"create": 1, "list": 2})


if __name__ == "__main__":
    faulthandler.dump_traceback_later(120, exit=True)   # a hard bound: never hang a test run
    warnings.simplefilter("ignore", ResourceWarning)     # urllib leaves the sockets of lost replies to the GC
    sys.warnoptions.append("ignore::ResourceWarning")
    unittest.main(verbosity=2)

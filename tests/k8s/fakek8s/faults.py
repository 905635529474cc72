"""Fault injection and request counters (the /_fake/ control endpoint; not part of the Kubernetes API)."""

import collections
import threading

from .errors import bad_request, injected

VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
CODES = {500, 503, 504, 429, 403, 409}
KEYS = {"lose_create_reply_every", "lose_mode", "lose_hang_s", "status_every", "slow_ms", "slow_verbs",
        "drop_watches_after_events", "expire_history"}


class StatusRule:
    """Every `every`-th request matching verbs/resources is answered with `code`, not carried out."""

    def __init__(self, spec):
        if not isinstance(spec, dict) or set(spec) - {"code", "every", "verbs", "resources", "retry_after", "times"}:
            raise bad_request("status_every: each rule is {code, every, verbs?, resources?, retry_after?, times?}")
        self.code = spec.get("code", 500)
        self.every = spec.get("every", 1)
        self.verbs = set(spec.get("verbs") or VERBS)
        self.resources = set(spec.get("resources") or [])
        self.retry_after = spec.get("retry_after", 1)
        self.times = spec.get("times")
        if self.code not in CODES or not isinstance(self.every, int) or self.every < 1 or self.verbs - VERBS:
            raise bad_request("status_every: code must be one of %s, every >= 1, verbs among %s"
                              % (sorted(CODES), sorted(VERBS)))
        self.seen = 0
        self.fired = 0

    def check(self, verb, resource):
        if verb not in self.verbs or (self.resources and resource not in self.resources):
            return False
        if self.times is not None and self.fired >= self.times:
            return False
        self.seen += 1
        if self.seen % self.every:
            return False
        self.fired += 1
        return True


class FaultInjector:
    """Holds the current faults, decides per request, and counts requests and what was injected."""

    def __init__(self, on_expire_history, on_drop_watches):
        self._lock = threading.Lock()
        self._on_expire_history = on_expire_history
        self._on_drop_watches = on_drop_watches
        self._config, self._rules, self._creates = {}, [], 0
        self.injected = collections.Counter()
        self.requests = collections.Counter()
        self.by_resource = collections.defaultdict(collections.Counter)
        self.completed = collections.defaultdict(collections.Counter)

    # ---- control
    def configure(self, config):
        if not isinstance(config, dict) or set(config) - KEYS:
            raise bad_request("unknown fault keys: %s (known: %s)"
                              % (sorted(set(config) - KEYS) if isinstance(config, dict) else config, sorted(KEYS)))
        rules = config.get("status_every") or []
        rules = [StatusRule(r) for r in (rules if isinstance(rules, list) else [rules])]
        if config.get("lose_mode", "close") not in ("close", "hang"):
            raise bad_request('lose_mode must be "close" or "hang"')
        with self._lock:
            self._config, self._rules, self._creates = dict(config), rules, 0
            self.injected.clear()
        if config.get("expire_history"):
            self.expire_history()

    def clear(self):
        self.configure({})

    def expire_history(self):
        self._on_expire_history()
        with self._lock:
            self.injected["compactions"] += 1

    def drop_watches(self):
        dropped = self._on_drop_watches()
        with self._lock:
            self.injected["dropped_watches"] += dropped
        return dropped

    def describe(self):
        with self._lock:
            rules = [{"code": r.code, "every": r.every, "seen": r.seen, "fired": r.fired} for r in self._rules]
            return {"faults": self._config, "rules": rules, "injected": dict(self.injected)}

    def stats(self):
        with self._lock:
            return {"requests": dict(self.requests),
                    "requests_by_resource": {k: dict(v) for k, v in self.by_resource.items()},
                    "completed": {k: dict(v) for k, v in self.completed.items()},
                    "injected": dict(self.injected)}

    def reset_stats(self):
        with self._lock:
            self.requests.clear()
            self.by_resource.clear()
            self.completed.clear()

    # ---- per request
    def before(self, verb, resource, namespace, name):
        """(delay in seconds, ApiError to answer instead, or None); counts the request."""
        with self._lock:
            self.requests[verb] += 1
            self.by_resource[resource][verb] += 1
            delay = 0.0
            if self._config.get("slow_ms") and verb in set(self._config.get("slow_verbs") or VERBS):
                delay = self._config["slow_ms"] / 1000.0
                self.injected["slowed"] += 1
            for rule in self._rules:
                if rule.check(verb, resource):
                    self.injected["status_%d" % rule.code] += 1
                    return delay, injected(rule.code, resource, verb, namespace, name, rule.retry_after)
            return delay, None

    def carried_out(self, verb, resource):
        """Records a request that changed (or read) the cluster; for a pod create, says whether to lose
        the reply: None, or ("close"|"hang", seconds)."""
        with self._lock:
            self.completed[resource][verb] += 1
            every = self._config.get("lose_create_reply_every")
            if verb != "create" or resource != "pods" or not every:
                return None
            self._creates += 1
            if self._creates % every:
                return None
            self.injected["lost_replies"] += 1
            return self._config.get("lose_mode", "close"), float(self._config.get("lose_hang_s", 30))

    def watch_event_limit(self):
        with self._lock:
            return self._config.get("drop_watches_after_events")

    def count_dropped_watch(self):
        with self._lock:
            self.injected["dropped_watches"] += 1

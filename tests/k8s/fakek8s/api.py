"""The REST semantics of each verb, independent of HTTP: decoding, defaults, validation, storage."""

import base64
import datetime
import json
import random
import threading
import time

from . import errors, protobuf
from .kinds import kind_of
from .patch import PATCH_TYPES, apply_patch
from .schema import DecodeError, decode_object
from .selectors import ObjectFilter
from .store import now_rfc3339

NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
VALIDATION_MODES = {"": "Warn", "Warn": "Warn", "Strict": "Strict", "Ignore": "Ignore"}
SERVER_SET_METADATA = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                       "generation", "selfLink")
NAMESPACE_CONTROLLER_DELAY_S = 1.0
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Reply:
    """A status code, a JSON body, extra headers (Warning)."""

    def __init__(self, code, body, headers=None):
        self.code, self.body, self.headers = code, body, headers or {}


def _query_flag(query, key):
    return query.get(key, "").lower() in ("true", "1")


def _dry_run(query, body=None):
    values = [query.get("dryRun", "")] + list((body or {}).get("dryRun") or [])
    if any(v not in ("", "All") for v in values):
        raise errors.bad_request('dryRun: Unsupported value: "%s": supported values: "All"'
                                 % next(v for v in values if v not in ("", "All")))
    return "All" in values


def _parse_body(raw, content_type):
    """The JSON (or, for the kinds kubectl's typed clients send so, protobuf) body as a dict/value."""
    media = (content_type or "application/json").split(";")[0].strip()
    if media == protobuf.CONTENT_TYPE:
        try:
            return protobuf.decode(raw)
        except protobuf.ProtobufError as e:
            raise errors.ApiError(415, "UnsupportedMediaType", str(e))
    if media not in ("application/json", "*/*"):
        raise errors.unsupported_media_type(["application/json", protobuf.CONTENT_TYPE])
    try:
        return json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError) as e:
        raise errors.bad_request("couldn't get version/kind; json parse error: %s" % e)


def _warnings(unknown):
    return {"Warning": ['299 - "unknown field \\"%s\\""' % path for path in unknown]} if unknown else {}


class Api:
    def __init__(self, registry, store, kubelet=None):
        self.registry, self.store, self.kubelet = registry, store, kubelet
        self.namespaces = registry.by_name("namespaces")
        self.pods = registry.by_name("pods")

    def bootstrap(self):
        for name in DEFAULT_NAMESPACES:
            self.create(self.namespaces, "", json.dumps({"metadata": {"name": name}}).encode(), {}, "")

    # ---------------------------------------------------------------- decoding
    def _decode(self, rtype, raw, content_type, query):
        return self._check_object(rtype, _parse_body(raw, content_type), query)

    def _check_object(self, rtype, obj, query):
        """(object, warning headers); a decode error is 400, unknown fields per fieldValidation."""
        mode = VALIDATION_MODES.get(query.get("fieldValidation", ""))
        if mode is None:
            raise errors.bad_request('fieldValidation: Invalid value: "%s": fieldValidation must be one of '
                                     '"Ignore", "Warn", or "Strict"' % query["fieldValidation"])
        if not isinstance(obj, dict):
            raise errors.bad_request("couldn't get version/kind; json parse error: expected an object")
        prefix = '%s in version "%s" cannot be handled as a %s: ' % (rtype.kind, rtype.version, rtype.kind)
        if obj.get("apiVersion", rtype.api_version) != rtype.api_version:
            raise errors.bad_request("the API version in the data (%s) does not match the expected API version "
                                     "(%s)" % (obj["apiVersion"], rtype.api_version))
        if obj.get("kind", rtype.kind) != rtype.kind:
            raise errors.bad_request(prefix + 'no kind "%s" is registered for version "%s"'
                                     % (obj["kind"], rtype.api_version))
        try:
            obj, unknown = decode_object(rtype.kind, obj)
        except DecodeError as e:
            raise errors.bad_request(prefix + str(e))
        if unknown and mode == "Strict":
            raise errors.bad_request(prefix + "strict decoding error: "
                                     + ", ".join('unknown field "%s"' % u for u in unknown))
        obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind
        obj.setdefault("metadata", {})
        return obj, _warnings(unknown) if mode == "Warn" else {}

    def _place(self, rtype, obj, namespace):
        meta = obj["metadata"]
        if rtype.namespaced:
            if meta.get("namespace", namespace) != namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                         "sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)

    # ---------------------------------------------------------------- verbs
    def create(self, rtype, namespace, raw, query, content_type):
        obj, headers = self._decode(rtype, raw, content_type, query)
        self._place(rtype, obj, namespace)
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise errors.bad_request("resourceVersion should not be set on objects to be created")
        for key in SERVER_SET_METADATA:
            meta.pop(key, None)
        kind = kind_of(rtype)
        generated = not meta.get("name") and meta.get("generateName")
        if generated:
            meta["name"] = self._generate_name(meta["generateName"])
        if not meta.get("name"):
            raise errors.invalid(rtype, "", [("metadata.name", "FieldValueRequired",
                                              "Required value: name or generateName is required")])
        kind.prepare_create(obj)
        causes = kind.validate(obj)
        if causes:
            raise errors.invalid(rtype, meta.get("name"), causes)
        if rtype.namespaced:
            self._check_namespace_open(rtype, namespace, meta.get("name"))
        if _dry_run(query):
            return Reply(201, obj, headers)
        for attempt in range(8):
            try:
                created = self.store.create(rtype, obj)
                break
            except errors.ApiError as e:
                if not generated or e.code != 409 or attempt == 7:
                    raise
                meta["name"] = self._generate_name(meta["generateName"])
        if rtype.name == "namespaces":
            self._create_default_service_account(created["metadata"]["name"])
        return Reply(201, created, headers)

    def _check_namespace_open(self, rtype, namespace, name):
        try:
            ns = self.store.get(self.namespaces, "", namespace)
        except errors.ApiError:
            raise errors.namespace_not_found(namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise errors.ApiError(403, "Forbidden", '%s "%s" is forbidden: unable to create new content in namespace '
                                  "%s because it is being terminated" % (rtype.name, name, namespace),
                                  {"name": name, "kind": rtype.name})

    @staticmethod
    def _generate_name(base):
        return base[:58] + "".join(random.choice(NAME_CHARS) for _ in range(5))

    def _create_default_service_account(self, namespace):
        body = json.dumps({"metadata": {"name": "default"}}).encode()
        try:
            self.create(self.registry.by_name("serviceaccounts"), namespace, body, {}, "")
        except errors.ApiError:
            pass

    def get(self, rtype, namespace, name):
        return self.store.get(rtype, namespace, name)

    def list(self, rtype, namespace, query):
        obj_filter = ObjectFilter(query.get("labelSelector"), query.get("fieldSelector"), rtype.name)
        items, rv = self.store.list(rtype, namespace, obj_filter)
        meta = {"resourceVersion": str(rv)}
        items = self._page(items, query, meta)
        for item in items:
            item.pop("apiVersion", None)
            item.pop("kind", None)
        return {"kind": rtype.kind + "List", "apiVersion": rtype.api_version, "metadata": meta, "items": items}

    @staticmethod
    def _page(items, query, meta):
        """limit/continue: the continue token names the last key served (not a consistent snapshot)."""
        start = query.get("continue")
        if start:
            try:
                after = json.loads(base64.b64decode(start))["start"]
            except (ValueError, KeyError, TypeError):
                raise errors.bad_request("continue key is not valid: illegal base64 data")
            items = [i for i in items if (i["metadata"].get("namespace", ""), i["metadata"]["name"]) > tuple(after)]
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise errors.bad_request('limit: Invalid value: "%s"' % query.get("limit"))
        if 0 < limit < len(items):
            last = items[limit - 1]["metadata"]
            token = {"start": [last.get("namespace", ""), last["name"]]}
            meta["continue"] = base64.b64encode(json.dumps(token).encode()).decode()
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        return items

    def update(self, rtype, namespace, name, raw, query, content_type, subresource=None):
        obj, headers = self._decode(rtype, raw, content_type, query)
        self._place(rtype, obj, namespace)
        if obj["metadata"].get("name", name) != name:
            raise errors.bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                     % (obj["metadata"]["name"], name))
        obj["metadata"]["name"] = name
        expected = obj["metadata"].get("resourceVersion")
        updated = self.store.update(rtype, namespace, name, lambda old: self._updated(rtype, old, obj, subresource),
                                    expected, dry_run=_dry_run(query))
        return Reply(200, updated, headers)

    def patch(self, rtype, namespace, name, raw, query, content_type, subresource=None):
        content_type = (content_type or "").split(";")[0].strip()
        if content_type not in PATCH_TYPES:
            raise errors.unsupported_media_type(sorted(PATCH_TYPES))
        try:
            patch = json.loads(raw or b"null")
        except (ValueError, UnicodeDecodeError) as e:
            raise errors.bad_request("error decoding patch: %s" % e)
        if content_type != "application/json-patch+json" and not isinstance(patch, dict):
            raise errors.bad_request("json: cannot unmarshal %s into Go value of type map[string]interface {}"
                                     % type(patch).__name__)
        warnings = {}

        def mutate(old):
            patched = apply_patch(content_type, old, patch)
            checked, headers = self._check_object(rtype, patched, query)
            warnings.update(headers)
            wanted = checked["metadata"].get("resourceVersion")
            if wanted and wanted != old["metadata"]["resourceVersion"]:
                raise errors.conflict(rtype, name)
            return self._updated(rtype, old, checked, subresource)
        updated = self.store.update(rtype, namespace, name, mutate, dry_run=_dry_run(query))
        return Reply(200, updated, warnings)

    def _updated(self, rtype, old, new, subresource):
        """The object an update stores: server-set metadata kept, status or spec only, validated."""
        meta, old_meta = new["metadata"], old["metadata"]
        if meta.get("uid") and meta["uid"] != old_meta["uid"]:
            raise errors.ApiError(409, "Conflict", "Precondition failed: UID in precondition: %s, UID in object "
                                  "meta: %s" % (old_meta["uid"], meta["uid"]))
        for key in SERVER_SET_METADATA + ("name", "namespace", "generateName"):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        kind = kind_of(rtype)
        if subresource == "status":
            result = dict(old)
            result["status"] = new.get("status", {})
            return result
        new = kind.prepare_update(new, old)
        causes = kind.validate_update(new, old)
        if causes:
            raise errors.invalid(rtype, old_meta["name"], causes)
        if "generation" in old_meta and new.get("spec") != old.get("spec"):
            meta["generation"] = old_meta["generation"] + 1
        return new

    # ---------------------------------------------------------------- delete
    def delete(self, rtype, namespace, name, raw, query, content_type=None):
        options = self._delete_options(raw, content_type)
        current = self.store.get(rtype, namespace, name)
        self._check_preconditions(rtype, current, options.get("preconditions") or {})
        if _dry_run(query, options):
            return Reply(200, current if rtype.name == "pods" else self._success(rtype, current))
        if rtype.name == "pods":
            return Reply(200, self._delete_pod(current, self._grace(current, query, options)))
        if rtype.name == "namespaces":
            return Reply(200, self._delete_namespace(current))
        last = self.store.remove(rtype, namespace, name) or current
        return Reply(200, self._success(rtype, last))

    def delete_collection(self, rtype, namespace, raw, query, content_type=None):
        options = self._delete_options(raw, content_type)
        listed = self.list(rtype, namespace, query)
        items = []
        for item in listed["items"]:
            meta = item["metadata"]
            try:
                items.append(self.delete(rtype, meta.get("namespace", ""), meta["name"],
                                         json.dumps(options).encode(), query).body)
            except errors.ApiError as e:
                if e.code != 404:
                    raise
        listed["items"] = [i for i in items if i.get("kind") != "Status"]
        return Reply(200, listed)

    @staticmethod
    def _delete_options(raw, content_type):
        if not raw or not raw.strip():
            return {}
        options = _parse_body(raw, content_type)
        if not isinstance(options, dict):
            raise errors.bad_request("DeleteOptions must be an object")
        return options

    @staticmethod
    def _check_preconditions(rtype, obj, pre):
        meta = obj["metadata"]
        for field, key in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            if pre.get(field) and pre[field] != meta.get(field):
                raise errors.ApiError(409, "Conflict", "Precondition failed: %s in precondition: %s, %s in object "
                                      "meta: %s" % (key, pre[field], key, meta.get(field)),
                                      {"name": meta["name"], "kind": rtype.name})

    @staticmethod
    def _grace(pod, query, options):
        value = options.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        if value is None or value == "":
            return pod["spec"].get("terminationGracePeriodSeconds", 30)
        try:
            return max(int(value), 0)
        except (TypeError, ValueError):
            raise errors.bad_request('gracePeriodSeconds: Invalid value: "%s"' % value)

    def _delete_pod(self, pod, grace):
        """Graceful deletion as the pod strategy does it: a pod no kubelet runs (unbound, finished, or no
        kubelet at all) or grace 0 goes at once; otherwise deletionTimestamp is set and the kubelet removes
        the pod once its process has exited."""
        meta = pod["metadata"]
        immediate = (grace == 0 or self.kubelet is None or not pod["spec"].get("nodeName")
                     or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"))
        if immediate:
            return self.store.remove(self.pods, meta["namespace"], meta["name"], meta["uid"]) or pod

        def mark(current):
            cmeta = current["metadata"]
            if cmeta.get("deletionTimestamp") and cmeta.get("deletionGracePeriodSeconds", 0) <= grace:
                return None
            when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=grace)
            cmeta["deletionTimestamp"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
            cmeta["deletionGracePeriodSeconds"] = grace
            return current
        try:
            return self.store.update(self.pods, meta["namespace"], meta["name"], mark)
        except errors.ApiError as e:
            if e.code == 404:   # the kubelet removed it meanwhile
                return pod
            raise

    def _delete_namespace(self, ns):
        """Marks the namespace Terminating; the namespace controller's part (deleting what is in it, then
        the namespace) runs shortly after, in the background."""
        def mark(current):
            if current["metadata"].get("deletionTimestamp"):
                return None
            current["metadata"]["deletionTimestamp"] = now_rfc3339()
            current["status"] = {"phase": "Terminating"}
            return current
        updated = self.store.update(self.namespaces, "", ns["metadata"]["name"], mark)
        threading.Thread(target=self._finalize_namespace, args=(ns["metadata"]["name"], ns["metadata"]["uid"]),
                         daemon=True).start()
        return updated

    def _finalize_namespace(self, name, uid):
        time.sleep(NAMESPACE_CONTROLLER_DELAY_S)
        deadline = time.monotonic() + 300
        while self._empty_namespace(name) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.store.remove(self.namespaces, "", name, uid)

    def _empty_namespace(self, namespace):
        """Deletes what the namespace holds (pods gracefully); returns how many pods are still there."""
        pods_left = 0
        for rtype in self.registry.types:
            if rtype.namespaced:
                for item in self.store.list(rtype, namespace)[0]:
                    if rtype.name == "pods":
                        pods_left += 1
                        self._delete_pod(item, item["spec"].get("terminationGracePeriodSeconds", 30))
                    else:
                        self.store.remove(rtype, namespace, item["metadata"]["name"])
        return pods_left

    @staticmethod
    def _success(rtype, obj):
        details = {"name": obj["metadata"]["name"], "kind": rtype.name, "uid": obj["metadata"].get("uid")}
        if rtype.group:
            details["group"] = rtype.group
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    # ---------------------------------------------------------------- watch and logs
    def watch(self, rtype, namespace, query, name=None):
        """A subscription, and whether to close the initial events with a bookmark (sendInitialEvents)."""
        field_selector = query.get("fieldSelector", "")
        if name:
            field_selector = ",".join(filter(None, [field_selector, "metadata.name=" + name]))
        obj_filter = ObjectFilter(query.get("labelSelector"), field_selector, rtype.name)
        send_initial = _query_flag(query, "sendInitialEvents")
        rv = query.get("resourceVersion", "")
        if send_initial or rv in ("", "0"):
            return self.store.watch(rtype, namespace, obj_filter, None, initial=True), send_initial
        try:
            since = int(rv)
        except ValueError:
            raise errors.bad_request('resourceVersion: Invalid value: "%s": must be a non-negative integer' % rv)
        return self.store.watch(rtype, namespace, obj_filter, since, initial=False), False

    def pod_log(self, namespace, name, query):
        """(path of the log file, pod uid) for a pod whose container has started; 400 otherwise."""
        pod = self.store.get(self.pods, namespace, name)
        names = [c["name"] for c in pod["spec"].get("containers") or []]
        container = query.get("container") or (names[0] if len(names) == 1 else None)
        if container is None:
            raise errors.bad_request("a container name must be specified for pod %s, choose one of: [%s]"
                                     % (name, " ".join(names)))
        if container not in names:
            raise errors.bad_request("container %s is not valid for pod %s" % (container, name))
        if _query_flag(query, "previous"):
            raise errors.bad_request('previous terminated container "%s" in pod "%s" not found' % (container, name))
        statuses = pod.get("status", {}).get("containerStatuses") or []
        state = statuses[0].get("state", {}) if statuses and container == names[0] else {}
        if self.kubelet is None or not ("running" in state or "terminated" in state):
            reason = state.get("waiting", {}).get("reason", "ContainerCreating")
            raise errors.bad_request('container "%s" in pod "%s" is waiting to start: %s' % (container, name, reason))
        return self.kubelet.log_path(pod), pod["metadata"]["uid"]

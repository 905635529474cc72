"""HTTP: routing Kubernetes paths to the API, discovery and OpenAPI, watch and log streams, /_fake/."""

import hashlib
import json
import os
import select
import socket
import sys
import threading
import time
import traceback
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import errors, resources
from .api import Reply
from .kinds import kind_of
from .schema import openapi_v3_document

BOOKMARK_INTERVAL_S = 15.0
DEFAULT_WATCH_TIMEOUT_S = 1800


class Route:
    """A parsed Kubernetes resource path."""

    def __init__(self, rtype, namespace, name, subresource):
        self.rtype, self.namespace, self.name, self.subresource = rtype, namespace, name, subresource


def parse_resource_path(registry, parts):
    """A Route for /api/v1/... or /apis/g/v/...; None when the path names no resource."""
    if parts[0] == "api" and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    rtype = registry.lookup(group, version, rest[0])
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if rtype is None or (sub and sub not in rtype.subresources) or "" in rest:
        return None
    if (rtype.namespaced and namespace is None and name is not None) or (not rtype.namespaced and namespace):
        return None
    return Route(rtype, namespace, name, sub)


class Documents:
    """Discovery and OpenAPI documents, computed once."""

    def __init__(self, registry):
        self.registry = registry
        self.openapi = {}
        for group, version in resources.GROUP_VERSIONS:
            doc = json.dumps(openapi_v3_document(registry.in_group_version(group, version))).encode()
            path = "apis/%s/%s" % (group, version) if group else "api/" + version
            self.openapi[path] = (doc, hashlib.sha256(doc).hexdigest().upper())

    def openapi_root(self):
        return {"paths": {path: {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (path, digest)}
                          for path, (_, digest) in self.openapi.items()}}

    def lookup(self, parts):
        """The discovery document at this path, or None."""
        n = len(parts)
        if parts == ["version"]:
            return resources.SERVER_VERSION
        if parts == ["api"]:
            return resources.api_versions()
        if parts == ["apis"]:
            return resources.api_group_list()
        if n == 2 and parts[0] == "api" and self.registry.has_group_version("", parts[1]):
            return resources.api_resource_list(self.registry, "", parts[1])
        if n == 2 and parts[0] == "apis" and any(g == parts[1] for g, _ in resources.GROUP_VERSIONS):
            return resources.api_group(parts[1])
        if n == 3 and parts[0] == "apis" and self.registry.has_group_version(parts[1], parts[2]):
            return resources.api_resource_list(self.registry, parts[1], parts[2])
        if parts == ["openapi", "v3"]:
            return self.openapi_root()
        return None


def to_table(rtype, objects, rv, accept, include):
    """A meta.k8s.io Table of the objects, as `kubectl get` asks for."""
    version = "v1beta1" if "v=v1beta1" in accept.split(",")[0] else "v1"
    kind = kind_of(rtype)
    columns = [{"name": name, "type": ctype, "format": fmt, "description": "", "priority": prio}
               for name, ctype, fmt, prio in kind.columns]
    rows = []
    for obj in objects:
        row = {"cells": kind.cells(obj)}
        if include == "Object":
            row["object"] = dict(obj, apiVersion=rtype.api_version, kind=rtype.kind)
        elif include != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/" + version,
                             "metadata": obj["metadata"]}
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/" + version, "metadata": {"resourceVersion": str(rv)},
            "columnDefinitions": columns, "rows": rows}


class ClientGone(Exception):
    """The connection was closed, by the client or on purpose."""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver/1.32"

    # ---------------------------------------------------------------- plumbing
    def log_message(self, fmt, *args):
        sys.stderr.write("fake-apiserver: %s\n" % (fmt % args))

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_PATCH(self):
        self._handle("PATCH")

    def do_DELETE(self):
        self._handle("DELETE")

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, code, body, content_type="application/json", headers=None):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for key, value in (headers or {}).items():
            for item in value if isinstance(value, list) else [value]:
                self.send_header(key, item)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _send_error(self, err):
        self._send(err.code, err.status(), headers=err.headers)

    def _abort(self):
        """Closes the connection without a reply or without ending the chunked stream."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _client_closed(self):
        """Whether the client has closed its end (a watch only writes, so it notices no other way)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _chunk(self, data):
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except OSError:
            raise ClientGone()

    def _start_stream(self, content_type):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()

    def _end_stream(self):
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    # ---------------------------------------------------------------- dispatch
    def _handle(self, method):
        self._replied = False
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")]
        try:
            body = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return
        try:
            if parts[0] == "_fake":
                self._control(method, parts[1:], body)
            else:
                self._authenticate()
                self._kubernetes(method, parts, query, body)
        except errors.ApiError as e:
            self._send_error(e)
        except ClientGone:
            self.close_connection = True
        except Exception as e:  # never crash on bad input: answer 500 (or cut a started reply), serve on
            traceback.print_exc()
            if self._replied:
                self._abort()
            else:
                self._send_error(errors.internal(repr(e)))

    def send_response(self, code, message=None):
        self._replied = True
        super().send_response(code, message)

    def _authenticate(self):
        token = self.server.token
        if token and self.headers.get("Authorization", "") != "Bearer " + token:
            raise errors.unauthorized()

    def _kubernetes(self, method, parts, query, body):
        if method == "GET" and parts[0] in ("healthz", "livez", "readyz") and len(parts) == 1:
            return self._send(200, b"ok", "text/plain; charset=utf-8")
        if method == "GET" and parts[:2] == ["openapi", "v3"] and len(parts) > 2:
            return self._openapi("/".join(parts[2:]))
        if method == "GET":
            doc = self.server.documents.lookup(parts)
            if doc is not None:
                return self._send(200, doc)
        route = parse_resource_path(self.server.registry, parts) if parts[0] in ("api", "apis") else None
        if route is None:
            raise errors.path_not_found()
        self._resource(method, route, query, body)

    def _openapi(self, path):
        entry = self.server.documents.openapi.get(path)
        if entry is None:
            raise errors.path_not_found()
        self._send(200, entry[0], headers={"Etag": '"%s"' % entry[1]})

    @staticmethod
    def _verb(method, route, query):
        watch = query.get("watch", "").lower() in ("true", "1")
        if method == "GET":
            if route.subresource == "log":
                return "get"
            return "watch" if watch else ("get" if route.name else "list")
        table = {("POST", False): "create", ("PUT", True): "update", ("PATCH", True): "patch",
                 ("DELETE", True): "delete", ("DELETE", False): "deletecollection"}
        verb = table.get((method, route.name is not None))
        if verb is None or (verb == "create" and route.rtype.namespaced and route.namespace is None):
            raise errors.method_not_allowed()
        return verb

    def _resource(self, method, route, query, body):
        verb = self._verb(method, route, query)
        rtype, faults = route.rtype, self.server.faults
        delay, injected = faults.before(verb, rtype.name, route.namespace, route.name)
        if delay:
            time.sleep(delay)
        if injected:
            raise injected
        if verb == "watch":
            return self._watch(route, query)
        if route.subresource == "log":
            return self._log(route, query)
        reply = self._carry_out(verb, route, query, body)
        lost = faults.carried_out(verb, rtype.name)
        if lost:
            return self._lose_reply(*lost)
        if verb in ("get", "list") and "as=Table" in self.headers.get("Accept", ""):
            objects = reply.body["items"] if verb == "list" else [reply.body]
            rv = reply.body["metadata"].get("resourceVersion", "")
            reply.body = to_table(rtype, objects, rv, self.headers["Accept"], query.get("includeObject", ""))
        self._send(reply.code, reply.body, headers=reply.headers)

    def _carry_out(self, verb, route, query, body):
        api, rtype, ns, name = self.server.api, route.rtype, route.namespace or "", route.name
        content_type = self.headers.get("Content-Type")
        if verb == "get":
            return Reply(200, api.get(rtype, ns, name))
        if verb == "list":
            return Reply(200, api.list(rtype, route.namespace, query))
        if verb == "create":
            return api.create(rtype, ns, body, query, content_type)
        if verb == "update":
            return api.update(rtype, ns, name, body, query, content_type, route.subresource)
        if verb == "patch":
            return api.patch(rtype, ns, name, body, query, content_type, route.subresource)
        if verb == "delete":
            return api.delete(rtype, ns, name, body, query, content_type)
        return api.delete_collection(rtype, route.namespace, body, query, content_type)

    def _lose_reply(self, mode, hang_s):
        self.log_message('"%s" reply lost (fault injection, %s)', self.requestline, mode)
        if mode == "hang":
            self.server.stopping.wait(hang_s)
        self._abort()

    # ---------------------------------------------------------------- streams
    def _watch(self, route, query):
        try:
            sub, send_initial = self.server.api.watch(route.rtype, route.namespace, query, route.name)
        except errors.ApiError as e:
            if e.code != 410:
                raise
            # As the watch cache does: a 200 stream with one ERROR event carrying the 410 Status.
            self._start_stream("application/json")
            self._send_event("ERROR", e.status())
            return self._end_stream()
        store = self.server.api.store
        try:
            self._start_stream("application/json")
            self._stream_events(route.rtype, sub, send_initial, query)
        finally:
            store.hub.unsubscribe(sub)

    def _stream_events(self, rtype, sub, send_initial, query):
        try:
            timeout = int(query.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT_S)
        except ValueError:
            timeout = DEFAULT_WATCH_TIMEOUT_S
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("true", "1")
        limit = self.server.faults.watch_event_limit()
        deadline, next_bookmark = time.monotonic() + timeout, time.monotonic() + BOOKMARK_INTERVAL_S
        sent, initial_left = 0, sub.initial_count if send_initial else -1
        while not self.server.stopping.is_set():
            if initial_left == 0:
                initial_left = -1
                self._send_event("BOOKMARK", self._bookmark(rtype, sub.start_rv, initial_end=True))
            if sub.dropped:
                return self._abort()
            if limit and sent >= limit:
                self.server.faults.count_dropped_watch()
                return self._abort()
            now = time.monotonic()
            if now >= deadline:
                break
            item = sub.next(timeout=min(0.5, deadline - now))
            if item is not None:
                self._send_event(item[0], item[1])
                sent += 1
                if initial_left > 0:
                    initial_left -= 1
            elif self._client_closed():
                return self._abort()
            elif bookmarks and now >= next_bookmark:
                rv = self.server.api.store.bookmark_rv(sub)
                if rv is not None:
                    self._send_event("BOOKMARK", self._bookmark(rtype, rv))
                    next_bookmark = now + BOOKMARK_INTERVAL_S
        self._end_stream()

    def _send_event(self, type_, obj):
        self._chunk(json.dumps({"type": type_, "object": obj}).encode() + b"\n")

    @staticmethod
    def _bookmark(rtype, rv, initial_end=False):
        meta = {"resourceVersion": str(rv), "creationTimestamp": None}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": meta}

    def _log(self, route, query):
        path, uid = self.server.api.pod_log(route.namespace, route.name, query)
        data = _read_log(path, query)
        if query.get("follow", "").lower() not in ("true", "1"):
            return self._send(200, data, "text/plain")
        self._start_stream("text/plain")
        kubelet, offset = self.server.kubelet, os.path.getsize(path) if os.path.exists(path) else 0
        if data:
            self._chunk(data)
        while not self.server.stopping.is_set():
            running = kubelet.is_running(uid)
            more = _read_from(path, offset)
            if more:
                offset += len(more)
                self._chunk(more)
            if not running:
                break
            time.sleep(0.2)
        self._end_stream()

    # ---------------------------------------------------------------- /_fake/
    def _control(self, method, parts, body):
        faults, key = self.server.faults, "/".join(parts)
        try:
            payload = json.loads(body) if body.strip() else {}
        except ValueError as e:
            raise errors.bad_request("invalid JSON: %s" % e)
        if key == "faults" and method == "POST":
            faults.configure(payload)
            return self._send(200, faults.describe())
        if key == "faults" and method in ("GET", "DELETE"):
            if method == "DELETE":
                faults.clear()
            return self._send(200, faults.describe())
        if key == "stats" and method in ("GET", "DELETE"):
            if method == "DELETE":
                faults.reset_stats()
            stats = faults.stats()
            stats["open_watches"] = self.server.api.store.hub.open_watches()
            stats["resourceVersion"] = str(self.server.api.store.resource_version)
            return self._send(200, stats)
        if key == "drop_watches" and method == "POST":
            return self._send(200, {"dropped": faults.drop_watches()})
        if key == "compact" and method == "POST":
            faults.expire_history()
            return self._send(200, {"resourceVersion": str(self.server.api.store.resource_version)})
        if key == "processes" and method == "GET":
            return self._send(200, self.server.kubelet.processes() if self.server.kubelet else {})
        raise errors.path_not_found()


def _read_log(path, query):
    data = _read_from(path, 0)
    tail = query.get("tailLines")
    if tail and tail.lstrip("-").isdigit() and int(tail) >= 0:
        lines = data.splitlines(keepends=True)
        data = b"".join(lines[len(lines) - int(tail):]) if int(tail) else b""
    limit = query.get("limitBytes")
    if limit and limit.isdigit():
        data = data[:int(limit)]
    return data


def _read_from(path, offset):
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read()
    except OSError:
        return b""


class FakeApiServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port, api, faults, registry, kubelet=None, token=None):
        super().__init__(("127.0.0.1", port), Handler)
        self.api, self.faults, self.registry, self.kubelet, self.token = api, faults, registry, kubelet, token
        self.documents = Documents(registry)
        self.stopping = threading.Event()

    def handle_error(self, request, client_address):
        """A client that goes away (reset, broken pipe) is routine; anything else is printed."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)

"""Object schemas: decoding with field validation (Strict/Warn/Ignore) and the OpenAPI v3 documents.

One description of each kind serves both ends, so what kubectl is told matches what the fake
enforces. Deeply nested types nobody here needs are `Open` (their fields are not checked, as if
they were free-form); every field a test or orb's node provider touches is typed.
"""


class Prim:
    def __init__(self, json_type, fmt=None):
        self.json_type, self.fmt = json_type, fmt

    def go(self):
        return {"string": "string", "boolean": "bool"}.get(self.json_type) or self.fmt or "float64"


class Quantity:
    """resource.Quantity: a string or a number ("500m", 2)."""

    def go(self):
        return "resource.Quantity"


class IntOrString:
    def go(self):
        return "intstr.IntOrString"


class Array:
    def __init__(self, item):
        self.item = item

    def go(self):
        return "[]" + self.item.go()


class Map:
    def __init__(self, value):
        self.value = value

    def go(self):
        return "map[string]" + self.value.go()


class Open:
    """An object whose fields are not checked (kept as given)."""

    def __init__(self, name=None):
        self.name = name

    def go(self):
        return "v1." + self.name.rsplit(".", 1)[-1] if self.name else "map[string]interface {}"


class Obj:
    def __init__(self, name, fields, gvk=None, description=""):
        self.name, self.fields, self.gvk = name, fields, gvk
        self.description = description or name.rsplit(".", 1)[-1]

    @property
    def short(self):
        return self.name.rsplit(".", 1)[-1]

    def go(self):
        package = self.name.rsplit(".", 2)[-2]
        return "%s.%s" % (package, self.short)


S, B = Prim("string"), Prim("boolean")
I32, I64 = Prim("integer", "int32"), Prim("integer", "int64")
STRS, MAP_S, QTY = Array(S), Map(S), Quantity()
CORE, META = "io.k8s.api.core.v1.", "io.k8s.apimachinery.pkg.apis.meta.v1."

OBJECT_META = Obj(META + "ObjectMeta", {
    "annotations": MAP_S, "creationTimestamp": S, "deletionGracePeriodSeconds": I64,
    "deletionTimestamp": S, "finalizers": STRS, "generateName": S, "generation": I64, "labels": MAP_S,
    "managedFields": Array(Open(META + "ManagedFieldsEntry")), "name": S, "namespace": S,
    "ownerReferences": Array(Open(META + "OwnerReference")), "resourceVersion": S, "selfLink": S, "uid": S})
KEY_SELECTOR = {"key": S, "name": S, "optional": B}
ENV_VAR = Obj(CORE + "EnvVar", {"name": S, "value": S, "valueFrom": Obj(CORE + "EnvVarSource", {
    "configMapKeyRef": Obj(CORE + "ConfigMapKeySelector", KEY_SELECTOR),
    "fieldRef": Obj(CORE + "ObjectFieldSelector", {"apiVersion": S, "fieldPath": S}),
    "resourceFieldRef": Open(CORE + "ResourceFieldSelector"),
    "secretKeyRef": Obj(CORE + "SecretKeySelector", KEY_SELECTOR)})})
RESOURCES = Obj(CORE + "ResourceRequirements", {
    "claims": Array(Open(CORE + "ResourceClaim")), "limits": Map(QTY), "requests": Map(QTY)})
CONTAINER = Obj(CORE + "Container", {
    "args": STRS, "command": STRS, "env": Array(ENV_VAR), "envFrom": Array(Open(CORE + "EnvFromSource")),
    "image": S, "imagePullPolicy": S, "lifecycle": Open(CORE + "Lifecycle"),
    "livenessProbe": Open(CORE + "Probe"), "name": S,
    "ports": Array(Obj(CORE + "ContainerPort", {"containerPort": I32, "hostIP": S, "hostPort": I32,
                                                 "name": S, "protocol": S})),
    "readinessProbe": Open(CORE + "Probe"), "resizePolicy": Array(Open(CORE + "ContainerResizePolicy")),
    "resources": RESOURCES, "restartPolicy": S, "securityContext": Open(CORE + "SecurityContext"),
    "startupProbe": Open(CORE + "Probe"), "stdin": B, "stdinOnce": B, "terminationMessagePath": S,
    "terminationMessagePolicy": S, "tty": B, "volumeDevices": Array(Open(CORE + "VolumeDevice")),
    "volumeMounts": Array(Obj(CORE + "VolumeMount", {
        "mountPath": S, "mountPropagation": S, "name": S, "readOnly": B, "recursiveReadOnly": S,
        "subPath": S, "subPathExpr": S})),
    "workingDir": S})
LOCAL_REF = Obj(CORE + "LocalObjectReference", {"name": S})
POD_SPEC = Obj(CORE + "PodSpec", {
    "activeDeadlineSeconds": I64, "affinity": Open(CORE + "Affinity"), "automountServiceAccountToken": B,
    "containers": Array(CONTAINER), "dnsConfig": Open(CORE + "PodDNSConfig"), "dnsPolicy": S,
    "enableServiceLinks": B, "ephemeralContainers": Array(Open(CORE + "EphemeralContainer")),
    "hostAliases": Array(Open(CORE + "HostAlias")), "hostIPC": B, "hostNetwork": B, "hostPID": B,
    "hostUsers": B, "hostname": S, "imagePullSecrets": Array(LOCAL_REF), "initContainers": Array(CONTAINER),
    "nodeName": S, "nodeSelector": MAP_S, "os": Open(CORE + "PodOS"), "overhead": Map(QTY),
    "preemptionPolicy": S, "priority": I32, "priorityClassName": S,
    "readinessGates": Array(Open(CORE + "PodReadinessGate")),
    "resourceClaims": Array(Open(CORE + "PodResourceClaim")), "resources": RESOURCES, "restartPolicy": S,
    "runtimeClassName": S, "schedulerName": S, "schedulingGates": Array(Open(CORE + "PodSchedulingGate")),
    "securityContext": Open(CORE + "PodSecurityContext"), "serviceAccount": S, "serviceAccountName": S,
    "setHostnameAsFQDN": B, "shareProcessNamespace": B, "subdomain": S, "terminationGracePeriodSeconds": I64,
    "tolerations": Array(Obj(CORE + "Toleration", {"effect": S, "key": S, "operator": S,
                                                   "tolerationSeconds": I64, "value": S})),
    "topologySpreadConstraints": Array(Open(CORE + "TopologySpreadConstraint")),
    "volumes": Array(Open(CORE + "Volume"))})


def _kind(group, kind, fields, package=CORE):
    top = {"apiVersion": S, "kind": S, "metadata": OBJECT_META}
    top.update(fields)
    return Obj(package + kind, top, gvk={"group": group, "version": "v1", "kind": kind})


RBAC = "io.k8s.api.rbac.v1."
SCHEMAS = {
    "Pod": _kind("", "Pod", {"spec": POD_SPEC, "status": Open(CORE + "PodStatus")}),
    "Secret": _kind("", "Secret", {"data": MAP_S, "immutable": B, "stringData": MAP_S, "type": S}),
    "ConfigMap": _kind("", "ConfigMap", {"binaryData": MAP_S, "data": MAP_S, "immutable": B}),
    "Service": _kind("", "Service", {"spec": Open(CORE + "ServiceSpec"), "status": Open(CORE + "ServiceStatus")}),
    "ServiceAccount": _kind("", "ServiceAccount", {
        "automountServiceAccountToken": B, "imagePullSecrets": Array(LOCAL_REF),
        "secrets": Array(Open(CORE + "ObjectReference"))}),
    "Event": Open(CORE + "Event"),
    "Namespace": _kind("", "Namespace", {"spec": Open(CORE + "NamespaceSpec"),
                                         "status": Open(CORE + "NamespaceStatus")}),
    "Node": _kind("", "Node", {"spec": Open(CORE + "NodeSpec"), "status": Open(CORE + "NodeStatus")}),
    "Deployment": _kind("apps", "Deployment", {
        "spec": Obj("io.k8s.api.apps.v1.DeploymentSpec", {
            "minReadySeconds": I32, "paused": B, "progressDeadlineSeconds": I32, "replicas": I32,
            "revisionHistoryLimit": I32, "selector": Open(META + "LabelSelector"),
            "strategy": Open("io.k8s.api.apps.v1.DeploymentStrategy"),
            "template": Obj(CORE + "PodTemplateSpec", {"metadata": OBJECT_META, "spec": POD_SPEC})}),
        "status": Open("io.k8s.api.apps.v1.DeploymentStatus")}, "io.k8s.api.apps.v1."),
    "Role": _kind("rbac.authorization.k8s.io", "Role", {"rules": Array(Obj(RBAC + "PolicyRule", {
        "apiGroups": STRS, "nonResourceURLs": STRS, "resourceNames": STRS, "resources": STRS,
        "verbs": STRS}))}, RBAC),
    "RoleBinding": _kind("rbac.authorization.k8s.io", "RoleBinding", {
        "roleRef": Obj(RBAC + "RoleRef", {"apiGroup": S, "kind": S, "name": S}),
        "subjects": Array(Obj(RBAC + "Subject", {"apiGroup": S, "kind": S, "name": S, "namespace": S}))},
        RBAC),
}


# ---------------------------------------------------------------- decoding

class DecodeError(Exception):
    """A value of the wrong JSON type: always a 400, whatever the field validation."""


def _json_type(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "value")


class Decoder:
    """Checks an object against a schema; collects unknown fields and drops them from the result."""

    INT_RANGE = {"int32": 2 ** 31, "int64": 2 ** 63}

    def __init__(self):
        self.unknown = []

    def decode(self, schema, value, path, struct, gopath):
        if value is None:
            return None
        method = getattr(self, "_" + type(schema).__name__.lower())
        return method(schema, value, path, struct, gopath)

    def _fail(self, value, schema, struct, gopath, detail=None):
        got = detail or _json_type(value)
        raise DecodeError("json: cannot unmarshal %s into Go struct field %s.%s of type %s"
                          % (got, struct, gopath, schema.go()))

    def _prim(self, schema, value, path, struct, gopath):
        if schema.json_type == "string" and not isinstance(value, str):
            self._fail(value, schema, struct, gopath)
        if schema.json_type == "boolean" and not isinstance(value, bool):
            self._fail(value, schema, struct, gopath)
        if schema.json_type == "integer":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self._fail(value, schema, struct, gopath)
            limit = self.INT_RANGE[schema.fmt]
            if isinstance(value, float) or not -limit <= value < limit:
                self._fail(value, schema, struct, gopath, "number %s" % value)
        return value

    def _quantity(self, schema, value, path, struct, gopath):
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self._fail(value, schema, struct, gopath)
        return value

    def _intorstring(self, schema, value, path, struct, gopath):
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            self._fail(value, schema, struct, gopath)
        return value

    def _array(self, schema, value, path, struct, gopath):
        if not isinstance(value, list):
            self._fail(value, schema, struct, gopath)
        return [self.decode(schema.item, v, "%s[%d]" % (path, i), struct, gopath) for i, v in enumerate(value)]

    def _map(self, schema, value, path, struct, gopath):
        if not isinstance(value, dict):
            self._fail(value, schema, struct, gopath)
        return {k: self.decode(schema.value, v, path + "." + k, struct, gopath) for k, v in value.items()}

    def _open(self, schema, value, path, struct, gopath):
        if not isinstance(value, dict):
            self._fail(value, schema, struct, gopath)
        return value

    def _obj(self, schema, value, path, struct, gopath):
        if not isinstance(value, dict):
            self._fail(value, schema, struct, gopath)
        out = {}
        for key, child in value.items():
            field = schema.fields.get(key)
            child_path = "%s.%s" % (path, key) if path else key
            if field is None:
                self.unknown.append(child_path)
                continue
            decoded = self.decode(field, child, child_path, schema.short,
                                  "%s.%s" % (gopath, key) if gopath else key)
            if decoded is not None:
                out[key] = decoded
        return out


def decode_object(kind, obj):
    """(pruned object, unknown field paths) for a body of this kind; raises DecodeError."""
    schema = SCHEMAS.get(kind)
    if schema is None:
        return obj, []
    decoder = Decoder()
    return decoder.decode(schema, obj, "", schema.short, ""), decoder.unknown


# ---------------------------------------------------------------- OpenAPI v3

def _ref(name):
    return {"$ref": "#/components/schemas/" + name}


def _openapi_schema(schema, named):
    """The OpenAPI form of a field's schema; named types are collected into `named`."""
    if isinstance(schema, Prim):
        out = {"type": schema.json_type}
        if schema.fmt:
            out["format"] = schema.fmt
        return out
    if isinstance(schema, Quantity):
        named.setdefault("io.k8s.apimachinery.pkg.api.resource.Quantity", {
            "description": "Quantity is a fixed-point representation of a number.",
            "oneOf": [{"type": "string"}, {"type": "number"}]})
        return _ref("io.k8s.apimachinery.pkg.api.resource.Quantity")
    if isinstance(schema, IntOrString):
        return {"x-kubernetes-int-or-string": True}
    if isinstance(schema, Array):
        return {"type": "array", "items": _openapi_schema(schema.item, named)}
    if isinstance(schema, Map):
        return {"type": "object", "additionalProperties": _openapi_schema(schema.value, named)}
    if isinstance(schema, Open):
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if schema.name not in named:
        named[schema.name] = None  # guards recursion
        body = {"description": schema.description, "type": "object",
                "properties": {k: _openapi_schema(v, named) for k, v in sorted(schema.fields.items())}}
        if schema.gvk:
            body["x-kubernetes-group-version-kind"] = [schema.gvk]
        named[schema.name] = body
    return {"allOf": [_ref(schema.name)], "default": {}}


def _query(name):
    return {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}


WRITE_PARAMS = [_query("dryRun"), _query("fieldManager"), _query("fieldValidation")]
# strategic-merge-patch is accepted but not advertised: the schemas here carry no patch merge keys, so
# kubectl computes strategic patches from its built-in types (which know them) rather than from these.
PATCH_TYPES = ["application/json-patch+json", "application/merge-patch+json"]


def _operation(action, rtype, op_id, schema_name, body=None):
    gvk = {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}
    op = {"operationId": op_id, "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk,
          "responses": {"200": {"description": "OK",
                                "content": {"application/json": {"schema": _ref(schema_name)}}}}}
    if action in ("post", "put", "patch"):
        op["parameters"] = WRITE_PARAMS + ([_query("force")] if action == "patch" else [])
        types = PATCH_TYPES if action == "patch" else ["*/*"]
        schema = {"type": "object"} if action == "patch" else _ref(schema_name)
        op["requestBody"] = {"required": True, "content": {t: {"schema": schema} for t in types}}
    if body:
        op.update(body)
    return op


def _op_id(verb, rtype):
    group = "".join(p.capitalize() for p in (rtype.group.split(".")[0] if rtype.group else "core").split("-"))
    scope = "Namespaced" if rtype.namespaced else ""
    return "%s%s%s%s%s" % (verb, group, rtype.version.capitalize(), scope, rtype.kind)


def _paths_for(rtype, schema_name):
    base = "/" + rtype.group_version_path
    coll = base + ("/namespaces/{namespace}/" if rtype.namespaced else "/") + rtype.name
    item = coll + "/{name}"
    list_ref = schema_name + "List"
    paths = {
        coll: {"get": _operation("list", rtype, _op_id("list", rtype), list_ref),
               "post": _operation("post", rtype, _op_id("create", rtype), schema_name)},
        item: {"get": _operation("get", rtype, _op_id("read", rtype), schema_name),
               "put": _operation("put", rtype, _op_id("replace", rtype), schema_name),
               "patch": _operation("patch", rtype, _op_id("patch", rtype), schema_name),
               "delete": _operation("delete", rtype, _op_id("delete", rtype), schema_name)},
    }
    for sub in rtype.subresources:
        suffix = sub.capitalize()
        if sub == "log":
            paths[item + "/log"] = {"get": _operation("get", rtype, _op_id("read", rtype) + "Log", schema_name)}
        else:
            paths[item + "/" + sub] = {
                "get": _operation("get", rtype, _op_id("read", rtype) + suffix, schema_name),
                "put": _operation("put", rtype, _op_id("replace", rtype) + suffix, schema_name),
                "patch": _operation("patch", rtype, _op_id("patch", rtype) + suffix, schema_name)}
    return paths


def openapi_v3_document(rtypes):
    """The OpenAPI v3 document of one group-version."""
    named, paths = {}, {}
    for rtype in rtypes:
        schema = SCHEMAS[rtype.kind]
        if isinstance(schema, Open):
            name = schema.name
            named[name] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                           "x-kubernetes-group-version-kind": [
                               {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}]}
        else:
            _openapi_schema(schema, named)
            name = schema.name
        named[name + "List"] = {"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "items": {"type": "array", "items": _ref(name)}, "metadata": {"type": "object"}}}
        paths.update(_paths_for(rtype, name))
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": named}}

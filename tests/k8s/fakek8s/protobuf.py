"""Request bodies in Kubernetes protobuf (application/vnd.kubernetes.protobuf), for the kinds kubectl's
typed clients send that way (`kubectl create namespace|secret|configmap|serviceaccount|role|rolebinding`,
and DeleteOptions). Decoded into the JSON form the rest of the fake works with.

The envelope is the 4 bytes "k8s\\0" and a runtime.Unknown {typeMeta{apiVersion, kind}, raw, ...}
whose raw bytes are the object's message. Field numbers are those of the generated.proto files.
"""

import base64
import datetime

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

# message -> {field number: (json name, type)}; "[]T" repeated, "map:V" map<string, V>, "-" skipped.
MESSAGES = {
    "Unknown": {1: ("typeMeta", "TypeMeta"), 2: ("raw", "raw"), 3: ("contentEncoding", "string"),
                4: ("contentType", "string")},
    "TypeMeta": {1: ("apiVersion", "string"), 2: ("kind", "string")},
    "Time": {1: ("seconds", "int"), 2: ("nanos", "int")},
    "ObjectMeta": {1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
                   4: ("selfLink", "string"), 5: ("uid", "string"), 6: ("resourceVersion", "string"),
                   7: ("generation", "int"), 8: ("creationTimestamp", "Time"), 9: ("deletionTimestamp", "Time"),
                   10: ("deletionGracePeriodSeconds", "int"), 11: ("labels", "map:string"),
                   12: ("annotations", "map:string"), 13: ("ownerReferences", "[]OwnerReference"),
                   14: ("finalizers", "[]string"), 17: ("managedFields", "-")},
    "OwnerReference": {5: ("apiVersion", "string"), 1: ("kind", "string"), 3: ("name", "string"),
                       4: ("uid", "string"), 6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")},
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec"), 3: ("status", "-")},
    "NamespaceSpec": {1: ("finalizers", "[]string")},
    "Secret": {1: ("metadata", "ObjectMeta"), 2: ("data", "map:bytes"), 3: ("type", "string"),
               4: ("stringData", "map:string"), 5: ("immutable", "bool")},
    "ConfigMap": {1: ("metadata", "ObjectMeta"), 2: ("data", "map:string"), 3: ("binaryData", "map:bytes"),
                  4: ("immutable", "bool")},
    "ServiceAccount": {1: ("metadata", "ObjectMeta"), 2: ("secrets", "[]ObjectReference"),
                       3: ("imagePullSecrets", "[]LocalObjectReference"),
                       4: ("automountServiceAccountToken", "bool")},
    "ObjectReference": {1: ("kind", "string"), 2: ("namespace", "string"), 3: ("name", "string"),
                        4: ("uid", "string"), 5: ("apiVersion", "string"), 6: ("resourceVersion", "string"),
                        7: ("fieldPath", "string")},
    "LocalObjectReference": {1: ("name", "string")},
    "Role": {1: ("metadata", "ObjectMeta"), 2: ("rules", "[]PolicyRule")},
    "PolicyRule": {1: ("verbs", "[]string"), 2: ("apiGroups", "[]string"), 3: ("resources", "[]string"),
                   4: ("resourceNames", "[]string"), 5: ("nonResourceURLs", "[]string")},
    "RoleBinding": {1: ("metadata", "ObjectMeta"), 2: ("subjects", "[]Subject"), 3: ("roleRef", "RoleRef")},
    "RoleRef": {1: ("apiGroup", "string"), 2: ("kind", "string"), 3: ("name", "string")},
    "Subject": {1: ("kind", "string"), 2: ("apiGroup", "string"), 3: ("name", "string"),
                4: ("namespace", "string")},
    "DeleteOptions": {1: ("gracePeriodSeconds", "int"), 2: ("preconditions", "Preconditions"),
                      3: ("orphanDependents", "bool"), 4: ("propagationPolicy", "string"),
                      5: ("dryRun", "[]string")},
    "Preconditions": {1: ("uid", "string"), 2: ("resourceVersion", "string")},
}
DECODABLE_KINDS = ("Namespace", "Secret", "ConfigMap", "ServiceAccount", "Role", "RoleBinding", "DeleteOptions")


class ProtobufError(ValueError):
    pass


def _varint(data, pos):
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data):
    """(field number, wire type, value) for each field of a message."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
            if len(value) != length:
                raise ProtobufError("truncated field %d" % number)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = int.from_bytes(data[pos:pos + size], "little"), pos + size
        else:
            raise ProtobufError("unsupported wire type %d" % wire)
        yield number, wire, value


def _scalar(ftype, value):
    if ftype == "string":
        return value.decode("utf-8")
    if ftype == "bytes":
        return base64.b64encode(value).decode()
    if ftype == "bool":
        return bool(value)
    if ftype == "int":
        return value - (1 << 64) if value >= 1 << 63 else value
    return decode_message(ftype, value)


def _time(msg):
    seconds = msg.get("seconds", 0)
    if not seconds:
        return None
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _map_entry(value_type, data):
    entry = {n: v for n, _, v in _fields(data)}
    return entry.get(1, b"").decode("utf-8"), _scalar(value_type, entry.get(2, b"" if value_type != "bool" else 0))


def decode_message(name, data):
    spec, out = MESSAGES[name], {}
    for number, _, value in _fields(data):
        if number not in spec or spec[number][1] == "-":
            continue
        field, ftype = spec[number]
        if ftype.startswith("map:"):
            key, val = _map_entry(ftype[4:], value)
            out.setdefault(field, {})[key] = val
        elif ftype.startswith("[]"):
            out.setdefault(field, []).append(_scalar(ftype[2:], value))
        elif ftype == "raw":
            out[field] = value
        else:
            out[field] = _scalar(ftype, value)
    if name == "Time":
        return _time(out)
    return {k: v for k, v in out.items() if v not in ("", None) or name == "DeleteOptions"}


def decode(body):
    """The object in a protobuf request body, as JSON-shaped dict; raises ProtobufError."""
    if not body.startswith(MAGIC):
        raise ProtobufError("provided data does not appear to be a protobuf message, expected prefix %r" % MAGIC)
    try:
        unknown = decode_message("Unknown", body[len(MAGIC):])
        type_meta = unknown.get("typeMeta", {})
        kind = type_meta.get("kind", "")
        if kind not in DECODABLE_KINDS:
            raise ProtobufError("the fake API server decodes protobuf only for %s, not %r; send JSON"
                                % (", ".join(DECODABLE_KINDS), kind))
        obj = decode_message(kind, unknown.get("raw", b""))
    except (IndexError, UnicodeDecodeError) as e:
        raise ProtobufError("malformed protobuf: %s" % e)
    obj["apiVersion"], obj["kind"] = type_meta.get("apiVersion", ""), kind
    return obj

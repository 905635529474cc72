"""PATCH bodies: JSON merge patch (RFC 7386), strategic merge patch, JSON patch (RFC 6902)."""

import copy

from .errors import ApiError, bad_request

# Lists that a strategic merge patch merges element-wise, by this key (from the Go struct tags).
MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name",
              "ports": "containerPort", "volumes": "name", "volumeMounts": "mountPath",
              "imagePullSecrets": "name", "conditions": "type", "ownerReferences": "uid"}
MERGED_PRIMITIVE_LISTS = {"finalizers"}


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _merge_list(key, current, patch):
    if key in MERGED_PRIMITIVE_LISTS and isinstance(current, list):
        return current + [v for v in patch if v not in current]
    merge_key = MERGE_KEYS.get(key)
    if not merge_key or not isinstance(current, list) or not all(isinstance(p, dict) for p in patch):
        return [strategic_merge(None, p) if isinstance(p, dict) else p for p in patch]
    out = [copy.deepcopy(c) for c in current]
    for item in patch:
        directive = item.get("$patch")
        index = next((i for i, c in enumerate(out)
                      if isinstance(c, dict) and c.get(merge_key) == item.get(merge_key)), None)
        if directive == "delete":
            if index is not None:
                out.pop(index)
        elif index is None:
            out.append(strategic_merge(None, item))
        else:
            out[index] = strategic_merge(out[index], item)
    return out


def strategic_merge(target, patch):
    """A merge patch that merges the lists Kubernetes merges by key; $patch/$setElementOrder honoured
    as far as needed (replace, delete) and otherwise ignored."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            out[name] = [v for v in out.get(name) or [] if v not in value]
            continue
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list):
            out[key] = _merge_list(key, out.get(key), value)
        else:
            merged = strategic_merge(out.get(key), value)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise _patch_error('invalid JSON pointer "%s"' % path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _patch_error(message):
    return ApiError(422, "Invalid", message)


def _parent(doc, parts):
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise _patch_error("doc is missing path: /%s" % "/".join(parts))
    return node


def _index(node, part, parts, allow_end):
    if part == "-" and allow_end:
        return len(node)
    if not part.isdigit() or int(part) > len(node) - (0 if allow_end else 1):
        raise _patch_error("doc is missing path: /%s: invalid index" % "/".join(parts))
    return int(part)


def _get(doc, parts):
    parent = _parent(doc, parts)
    last = parts[-1]
    if isinstance(parent, list):
        return parent[_index(parent, last, parts, False)]
    if not isinstance(parent, dict) or last not in parent:
        raise _patch_error("doc is missing path: /%s" % "/".join(parts))
    return parent[last]


def _remove(doc, parts):
    parent = _parent(doc, parts)
    if isinstance(parent, list):
        return parent.pop(_index(parent, parts[-1], parts, False))
    if not isinstance(parent, dict) or parts[-1] not in parent:
        raise _patch_error("unable to remove nonexistent key: %s: missing value" % parts[-1])
    return parent.pop(parts[-1])


def _add(doc, parts, value, replace=False):
    if not parts:
        return value
    parent = _parent(doc, parts)
    if isinstance(parent, list):
        i = _index(parent, parts[-1], parts, not replace)
        if replace:
            parent[i] = value
        else:
            parent.insert(i, value)
    elif isinstance(parent, dict):
        if replace and parts[-1] not in parent:
            raise _patch_error("replace operation does not apply: doc is missing key: /%s: missing value"
                               % "/".join(parts))
        parent[parts[-1]] = value
    else:
        raise _patch_error("doc is missing path: /%s" % "/".join(parts))
    return doc


def json_patch(target, ops):
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or "path" not in op:
            raise bad_request("invalid JSON patch operation: %r" % (op,))
        kind, parts = op.get("op"), _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind == "replace":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")), replace=True)
        elif kind == "remove":
            _remove(doc, parts)
        elif kind == "test":
            if _get(doc, parts) != op.get("value"):
                raise _patch_error("testing value /%s failed: test failed" % "/".join(parts))
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = _remove(doc, source) if kind == "move" else copy.deepcopy(_get(doc, source))
            doc = _add(doc, parts, value)
        else:
            raise bad_request("Unexpected kind: %s" % kind)
    return doc


PATCH_TYPES = {
    "application/merge-patch+json": merge_patch,
    "application/strategic-merge-patch+json": strategic_merge,
    "application/json-patch+json": json_patch,
}


def apply_patch(content_type, target, patch):
    return PATCH_TYPES[content_type](target, patch)

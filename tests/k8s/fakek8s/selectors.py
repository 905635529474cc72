"""Label and field selectors, parsed and matched as the Kubernetes API server does."""

import re

from .errors import bad_request

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|notin(?=[\s(])|in(?=[\s(])|>|<|[^\s!=(),<>]+)")


class LabelSelector:
    """A parsed label selector: a list of (key, operator, values) requirements, all of which must hold."""

    def __init__(self, text):
        self.requirements = _parse_labels(text or "")

    def matches(self, labels):
        labels = labels or {}
        return all(_requirement_holds(req, labels) for req in self.requirements)


def _tokens(text):
    pos, out = 0, []
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m:
            raise bad_request("unable to parse requirement: invalid label selector %r" % text)
        out.append(m.group(1))
        pos = m.end()
    return out


def _check_value(value, text):
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise bad_request('unable to parse requirement: values[0][%s]: Invalid value: "%s": a valid label '
                          'must be an empty string or consist of alphanumeric characters, \'-\', \'_\' or '
                          '\'.\', and must start and end with an alphanumeric character' % (text, value))
    return value


def _parse_set(tokens, i, text):
    if i >= len(tokens) or tokens[i] != "(":
        found = tokens[i] if i < len(tokens) else ""
        raise bad_request("unable to parse requirement: found '%s', expected: '('" % found)
    values, i = [], i + 1
    while i < len(tokens) and tokens[i] != ")":
        if tokens[i] != ",":
            values.append(_check_value(tokens[i], text))
        i += 1
    if i >= len(tokens):
        raise bad_request("unable to parse requirement: found '', expected: ')'")
    return values, i + 1


def _parse_labels(text):
    tokens, i, reqs = _tokens(text), 0, []
    while i < len(tokens):
        if tokens[i] == "!":
            if i + 1 >= len(tokens):
                raise bad_request("unable to parse requirement: found '', expected: identifier")
            reqs.append((tokens[i + 1], "!", []))
            i += 2
        else:
            key, i = tokens[i], i + 1
            op = tokens[i] if i < len(tokens) else ","
            if op == ",":
                reqs.append((key, "exists", []))
            elif op in ("in", "notin"):
                values, i = _parse_set(tokens, i + 1, text)
                reqs.append((key, op, values))
                op = None
            elif op in ("=", "==", "!=", ">", "<"):
                value = tokens[i + 1] if i + 1 < len(tokens) and tokens[i + 1] != "," else ""
                i += 2 if value else 1
                if op in (">", "<") and not value.lstrip("-").isdigit():
                    raise bad_request("unable to parse requirement: for 'Gt', 'Lt' operators, "
                                      "the value must be an integer")
                reqs.append((key, "=" if op == "==" else op, [_check_value(value, text)]))
            else:
                raise bad_request("unable to parse requirement: found '%s', expected: in, notin, =, ==, !=, "
                                  "gt, lt" % op)
        if i < len(tokens):
            if tokens[i] != ",":
                raise bad_request("found '%s', expected: ',' or 'end of string'" % tokens[i])
            i += 1
    return reqs


def _requirement_holds(req, labels):
    key, op, values = req
    present, value = key in labels, labels.get(key)
    if op == "exists":
        return present
    if op == "!":
        return not present
    if op == "=":
        return present and value == values[0]
    if op == "!=":
        return not present or value != values[0]
    if op == "in":
        return present and value in values
    if op == "notin":
        return not present or value not in values
    try:
        number = int(value)
    except (TypeError, ValueError):
        return False
    return number > int(values[0]) if op == ">" else number < int(values[0])


# ---------------------------------------------------------------- fields

COMMON_FIELDS = ("metadata.name", "metadata.namespace")
FIELDS = {
    "pods": COMMON_FIELDS + ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                             "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                             "status.nominatedNodeName"),
    "secrets": COMMON_FIELDS + ("type",),
    "events": COMMON_FIELDS + ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                               "involvedObject.uid", "involvedObject.apiVersion",
                               "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                               "reportingComponent", "source", "type"),
    "namespaces": COMMON_FIELDS + ("status.phase",),
}


def _split_unescaped(text, sep):
    parts, cur, i = [], "", 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            cur += text[i:i + 2]
            i += 2
            continue
        if text[i] == sep:
            parts.append(cur)
            cur = ""
        else:
            cur += text[i]
        i += 1
    parts.append(cur)
    return parts


def _unescape(value):
    return re.sub(r"\\(.)", r"\1", value)


def _field_value(obj, path):
    value = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


class FieldSelector:
    """A parsed field selector: field=value, field==value and field!=value terms, all of which must hold."""

    def __init__(self, text, resource):
        self.terms = []
        allowed = FIELDS.get(resource, COMMON_FIELDS)
        for term in _split_unescaped(text or "", ","):
            if not term.strip():
                continue
            self.terms.append(self._parse_term(term.strip(), allowed))

    @staticmethod
    def _parse_term(term, allowed):
        for op in ("!=", "==", "="):
            idx = term.find(op)
            if idx > 0:
                field, value = term[:idx].strip(), _unescape(term[idx + len(op):].strip())
                if field not in allowed:
                    raise bad_request("field label not supported: %s" % field)
                return field, op != "!=", value
        raise bad_request("invalid selector: '%s'; can't understand '%s'" % (term, term))

    def matches(self, obj):
        return all((_field_value(obj, f) == v) == eq for f, eq, v in self.terms)

    def exact_name(self):
        """The name this selector pins with metadata.name=..., if any."""
        return next((v for f, eq, v in self.terms if f == "metadata.name" and eq), None)


class ObjectFilter:
    """A label and a field selector together."""

    def __init__(self, label_text, field_text, resource):
        self.labels = LabelSelector(label_text)
        self.fields = FieldSelector(field_text, resource)

    def matches(self, obj):
        return (self.labels.matches(obj.get("metadata", {}).get("labels"))
                and self.fields.matches(obj))

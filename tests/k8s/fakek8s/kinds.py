"""What the API server does per kind: defaults, validation (422 Invalid), update rules, table columns."""

import base64
import binascii
import copy
import datetime
import re

from . import errors

SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                 "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                 "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
             "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
               "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
               "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
FIELD_REF_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                   "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")


def _name_causes(value, field, kind="subdomain"):
    pattern, limit, msg = {"subdomain": (SUBDOMAIN, 253, SUBDOMAIN_MSG), "label": (LABEL, 63, LABEL_MSG),
                           "dns1035": (DNS1035, 63, DNS1035_MSG)}[kind]
    if len(value) > limit:
        return [(field, "FieldValueInvalid", 'Invalid value: "%s": must be no more than %d characters'
                 % (value, limit))]
    if not pattern.match(value):
        return [(field, "FieldValueInvalid", 'Invalid value: "%s": %s' % (value, msg))]
    return []


def _label_key_causes(key, field):
    prefix, _, name = key.rpartition("/")
    if (prefix and (len(prefix) > 253 or not SUBDOMAIN.match(prefix))) or len(name) > 63 \
            or not QUALIFIED_NAME.match(name):
        return [(field, "FieldValueInvalid", 'Invalid value: "%s": name part must consist of alphanumeric '
                 "characters, '-', '_' or '.', and must start and end with an alphanumeric character" % key)]
    return []


def metadata_causes(meta, name_kind):
    causes = []
    if not meta.get("name") and not meta.get("generateName"):
        causes.append(("metadata.name", "FieldValueRequired", "Required value: name or generateName is required"))
    elif meta.get("name"):
        causes += _name_causes(meta["name"], "metadata.name", name_kind)
    for key, value in (meta.get("labels") or {}).items():
        causes += _label_key_causes(key, "metadata.labels")
        if len(value) > 63 or not LABEL_VALUE.match(value):
            causes.append(("metadata.labels", "FieldValueInvalid",
                           'Invalid value: "%s": a valid label must be an empty string or consist of '
                           "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                           "alphanumeric character" % value))
    for key in meta.get("annotations") or {}:
        causes += _label_key_causes(key, "metadata.annotations")
    return causes


def age(timestamp):
    try:
        then = datetime.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        return "<unknown>"
    secs = int((datetime.datetime.now(datetime.timezone.utc) - then).total_seconds())
    if secs < 120:
        return "%ds" % max(secs, 0)
    if secs < 600:
        return "%dm%ds" % (secs // 60, secs % 60) if secs % 60 else "%dm" % (secs // 60)
    if secs < 3 * 3600:
        return "%dm" % (secs // 60)
    if secs < 48 * 3600:
        return "%dh" % (secs // 3600)
    return "%dd" % (secs // 86400)


class Kind:
    """Behaviour shared by every kind; subclasses override what differs."""

    name_kind = "subdomain"
    has_status = False
    columns = [("Name", "string", "name", 0), ("Age", "string", "", 0)]

    def prepare_create(self, obj):
        """Server-side defaults for a new object."""

    def validate(self, obj):
        return metadata_causes(obj["metadata"], self.name_kind)

    def validate_update(self, new, old):
        return self.validate(new)

    def prepare_update(self, new, old):
        """The stored object an update of the main resource makes: status is kept as it was."""
        if self.has_status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        return new

    def cells(self, obj):
        return [obj["metadata"]["name"], age(obj["metadata"].get("creationTimestamp"))]


def _image_pull_policy(image):
    last = (image or "").rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    return "Always" if ":" not in last or last.endswith(":latest") else "IfNotPresent"


def _default_container(c):
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("imagePullPolicy", _image_pull_policy(c.get("image")))
    c.setdefault("resources", {})
    for port in c.get("ports") or []:
        port.setdefault("protocol", "TCP")
    for env in c.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef")
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")


def default_pod_spec(spec):
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        _default_container(c)


def _qos_class(spec):
    resources = [c.get("resources") or {} for c in spec.get("containers") or []]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(r.get("limits") and set(r["limits"]) >= {"cpu", "memory"}
                     and all(r.get("requests", r["limits"]).get(k, v) == v for k, v in r["limits"].items())
                     for r in resources)
    return "Guaranteed" if guaranteed else "Burstable"


def _env_causes(env, field):
    causes = []
    for j, var in enumerate(env or []):
        where = "%s.env[%d]" % (field, j)
        if not var.get("name"):
            causes.append((where + ".name", "FieldValueRequired", "Required value"))
        source = var.get("valueFrom") or {}
        ref = source.get("fieldRef")
        if ref:
            path = ref.get("fieldPath", "")
            if path not in FIELD_REF_PATHS and not re.match(r"^metadata\.(labels|annotations)\['[^']+'\]$", path):
                causes.append((where + ".valueFrom.fieldRef.fieldPath", "FieldValueNotSupported",
                               'Unsupported value: "%s": supported values: %s'
                               % (path, ", ".join('"%s"' % p for p in FIELD_REF_PATHS))))
        for key_ref in ("secretKeyRef", "configMapKeyRef"):
            if source.get(key_ref) is not None and not source[key_ref].get("key"):
                causes.append(("%s.valueFrom.%s.key" % (where, key_ref), "FieldValueRequired", "Required value"))
        if var.get("value") and source:
            causes.append((where + ".valueFrom", "FieldValueInvalid",
                           "Invalid value: \"\": may not be specified when `value` is not empty"))
    return causes


def pod_spec_causes(spec, field="spec"):
    containers = spec.get("containers") or []
    causes = [] if containers else [(field + ".containers", "FieldValueRequired", "Required value")]
    seen = set()
    for i, c in enumerate(containers):
        where = "%s.containers[%d]" % (field, i)
        if not c.get("name"):
            causes.append((where + ".name", "FieldValueRequired", "Required value"))
        else:
            causes += _name_causes(c["name"], where + ".name", "label")
            if c["name"] in seen:
                causes.append((where + ".name", "FieldValueDuplicate", 'Duplicate value: "%s"' % c["name"]))
            seen.add(c["name"])
        if not c.get("image"):
            causes.append((where + ".image", "FieldValueRequired", "Required value"))
        causes += _env_causes(c.get("env"), where)
    policy = spec.get("restartPolicy")
    if policy not in ("Always", "OnFailure", "Never"):
        causes.append((field + ".restartPolicy", "FieldValueNotSupported",
                       'Unsupported value: "%s": supported values: "Always", "OnFailure", "Never"' % policy))
    return causes


class PodKind(Kind):
    has_status = True
    columns = [("Name", "string", "name", 0), ("Ready", "string", "", 0), ("Status", "string", "", 0),
               ("Restarts", "string", "", 0), ("Age", "string", "", 0), ("IP", "string", "", 1),
               ("Node", "string", "", 1), ("Nominated Node", "string", "", 1), ("Readiness Gates", "string", "", 1)]
    MUTABLE_SPEC_NOTE = ("pod updates may not change fields other than `spec.containers[*].image`,"
                         "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
                         "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
                         "set to 1 if it was previously negative)")

    def prepare_create(self, obj):
        spec = obj.setdefault("spec", {})
        default_pod_spec(spec)
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}

    def validate(self, obj):
        return super().validate(obj) + pod_spec_causes(obj.get("spec") or {})

    def validate_update(self, new, old):
        causes = self.validate(new)
        default_pod_spec(new.setdefault("spec", {}))
        comparable = copy.deepcopy(new["spec"])
        for mine, theirs in zip(comparable.get("containers") or [], old["spec"].get("containers") or []):
            mine["image"] = theirs.get("image")
        for key in ("activeDeadlineSeconds", "tolerations", "nodeName"):
            comparable.pop(key, None)
        reference = {k: v for k, v in old["spec"].items() if k not in ("activeDeadlineSeconds", "tolerations",
                                                                       "nodeName")}
        if comparable != reference:
            causes.append(("spec", "FieldValueForbidden", "Forbidden: " + self.MUTABLE_SPEC_NOTE))
        if new["spec"].get("nodeName", old["spec"].get("nodeName")) != old["spec"].get("nodeName"):
            causes.append(("spec.nodeName", "FieldValueForbidden", "Forbidden: field is immutable"))
        new["spec"]["nodeName"] = old["spec"].get("nodeName")
        if new["spec"]["nodeName"] is None:
            del new["spec"]["nodeName"]
        return causes

    @staticmethod
    def display_status(pod):
        if pod["metadata"].get("deletionTimestamp"):
            return "Terminating"
        for cs in pod.get("status", {}).get("containerStatuses") or []:
            state = cs.get("state") or {}
            for key in ("waiting", "terminated"):
                if state.get(key, {}).get("reason"):
                    return state[key]["reason"]
        return pod.get("status", {}).get("reason") or pod.get("status", {}).get("phase", "Unknown")

    def cells(self, pod):
        status = pod.get("status", {})
        statuses = status.get("containerStatuses") or []
        ready = sum(1 for cs in statuses if cs.get("ready"))
        restarts = sum(cs.get("restartCount", 0) for cs in statuses)
        return [pod["metadata"]["name"], "%d/%d" % (ready, len(pod["spec"].get("containers") or [])),
                self.display_status(pod), str(restarts), age(pod["metadata"].get("creationTimestamp")),
                status.get("podIP") or "<none>", pod["spec"].get("nodeName") or "<none>", "<none>", "<none>"]


class SecretKind(Kind):
    def prepare_create(self, obj):
        obj.setdefault("type", "Opaque")
        self._fold_string_data(obj)

    def prepare_update(self, new, old):
        self._fold_string_data(new)
        return new

    @staticmethod
    def _fold_string_data(obj):
        """stringData is write-only: merged into data, base64-encoded, as the API server does."""
        for key, value in (obj.pop("stringData", None) or {}).items():
            obj.setdefault("data", {})[key] = base64.b64encode(value.encode()).decode()

    def validate(self, obj):
        causes = super().validate(obj)
        for key, value in (obj.get("data") or {}).items():
            if not CONFIG_KEY.match(key):
                causes.append(("data[%s]" % key, "FieldValueInvalid",
                               'Invalid value: "%s": a valid config key must consist of alphanumeric characters, '
                               "'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                               "validation is '[-._a-zA-Z0-9]+')" % key))
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise errors.bad_request("Secret in version \"v1\" cannot be handled as a Secret: "
                                         "illegal base64 data at input byte 0")
        return causes


class NamespaceKind(Kind):
    name_kind = "label"
    has_status = True
    columns = [("Name", "string", "name", 0), ("Status", "string", "", 0), ("Age", "string", "", 0)]

    def prepare_create(self, obj):
        obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
        obj["status"] = {"phase": "Active"}
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]

    def cells(self, obj):
        return [obj["metadata"]["name"], obj.get("status", {}).get("phase", ""),
                age(obj["metadata"].get("creationTimestamp"))]


class ServiceKind(Kind):
    name_kind = "dns1035"
    has_status = True
    _next_ip = [10]

    def prepare_create(self, obj):
        spec = obj.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if spec.get("clusterIP") != "None":
            self._next_ip[0] += 1
            spec["clusterIP"] = "10.96.%d.%d" % (self._next_ip[0] // 250, self._next_ip[0] % 250 + 1)
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        for port in spec.get("ports") or []:
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
        obj["status"] = {"loadBalancer": {}}


class DeploymentKind(Kind):
    has_status = True

    def prepare_create(self, obj):
        obj["metadata"]["generation"] = 1
        spec = obj.setdefault("spec", {})
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        default_pod_spec(spec.setdefault("template", {}).setdefault("spec", {}))
        obj["status"] = {}

    def validate(self, obj):
        spec = obj.get("spec") or {}
        causes = super().validate(obj) + pod_spec_causes((spec.get("template") or {}).get("spec") or {},
                                                         "spec.template.spec")
        if not spec.get("selector"):
            causes.append(("spec.selector", "FieldValueRequired", "Required value"))
        return causes

    def prepare_update(self, new, old):
        default_pod_spec(new.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {}))
        return super().prepare_update(new, old)


class NodeKind(Kind):
    has_status = True


KINDS = {"Pod": PodKind(), "Secret": SecretKind(), "Namespace": NamespaceKind(), "Service": ServiceKind(),
         "Deployment": DeploymentKind(), "Node": NodeKind()}


def kind_of(rtype):
    return KINDS.get(rtype.kind) or Kind()

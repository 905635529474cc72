"""The resource types the fake serves, and the discovery documents that describe them."""

from dataclasses import dataclass

SERVER_VERSION = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.0", "gitCommit": "70d3cc986aa8221cd1dfb1121852688902d3bf53",
    "gitTreeState": "clean", "buildDate": "2024-12-11T17:59:15Z", "goVersion": "go1.23.3",
    "compiler": "gc", "platform": "linux/amd64",
}

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class ResourceType:
    name: str            # plural, as in the URL: "pods"
    singular: str
    kind: str
    group: str           # "" for the core group
    version: str
    namespaced: bool
    short_names: tuple = ()
    subresources: tuple = ()   # ("status", "log")
    categories: tuple = ()

    @property
    def api_version(self):
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    @property
    def group_version_path(self):
        return "apis/%s/%s" % (self.group, self.version) if self.group else "api/" + self.version


RESOURCE_TYPES = [
    ResourceType("pods", "pod", "Pod", "", "v1", True, ("po",), ("status", "log"), ("all",)),
    ResourceType("secrets", "secret", "Secret", "", "v1", True),
    ResourceType("configmaps", "configmap", "ConfigMap", "", "v1", True, ("cm",)),
    ResourceType("services", "service", "Service", "", "v1", True, ("svc",), ("status",), ("all",)),
    ResourceType("serviceaccounts", "serviceaccount", "ServiceAccount", "", "v1", True, ("sa",)),
    ResourceType("events", "event", "Event", "", "v1", True, ("ev",)),
    ResourceType("namespaces", "namespace", "Namespace", "", "v1", False, ("ns",), ("status",)),
    ResourceType("nodes", "node", "Node", "", "v1", False, ("no",), ("status",)),
    ResourceType("deployments", "deployment", "Deployment", "apps", "v1", True, ("deploy",), ("status",), ("all",)),
    ResourceType("roles", "role", "Role", "rbac.authorization.k8s.io", "v1", True),
    ResourceType("rolebindings", "rolebinding", "RoleBinding", "rbac.authorization.k8s.io", "v1", True),
]

GROUP_VERSIONS = [("", "v1"), ("apps", "v1"), ("rbac.authorization.k8s.io", "v1")]


class Registry:
    """Looks resource types up by (group, version, plural name)."""

    def __init__(self, types=RESOURCE_TYPES):
        self.types = list(types)
        self._by_path = {(t.group, t.version, t.name): t for t in self.types}

    def lookup(self, group, version, name):
        return self._by_path.get((group, version, name))

    def by_name(self, name):
        return next(t for t in self.types if t.name == name)

    def in_group_version(self, group, version):
        return [t for t in self.types if t.group == group and t.version == version]

    def has_group_version(self, group, version):
        return (group, version) in GROUP_VERSIONS


def api_versions():
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]}


def _api_group(group):
    gv = {"groupVersion": "%s/v1" % group, "version": "v1"}
    return {"name": group, "versions": [gv], "preferredVersion": gv}


def api_group_list():
    groups = [_api_group(g) for g, _ in GROUP_VERSIONS if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group):
    doc = _api_group(group)
    doc.update({"kind": "APIGroup", "apiVersion": "v1"})
    return doc


def _resource_entry(rtype):
    entry = {"name": rtype.name, "singularName": rtype.singular, "namespaced": rtype.namespaced,
             "kind": rtype.kind, "verbs": list(ALL_VERBS)}
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)
    return entry


def _subresource_entry(rtype, sub):
    verbs = ["get"] if sub == "log" else ["get", "patch", "update"]
    return {"name": "%s/%s" % (rtype.name, sub), "singularName": "", "namespaced": rtype.namespaced,
            "kind": rtype.kind, "verbs": verbs}


def api_resource_list(registry, group, version):
    resources = []
    for rtype in registry.in_group_version(group, version):
        resources.append(_resource_entry(rtype))
        resources.extend(_subresource_entry(rtype, sub) for sub in rtype.subresources)
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": "%s/%s" % (group, version) if group else version, "resources": resources}

"""Ray's ray.util, renamed: scheduling strategies, placement groups, collectives, ActorPool,
list_named_actors, get_node_ip_address."""
import os

from orb import collective  # noqa: F401 (orb.util.collective, as ray.util.collective)
from orb.util import scheduling_strategies  # noqa: F401
from orb.util.placement_group import (PlacementGroup, get_current_placement_group, get_placement_group,  # noqa: F401
                                      placement_group, placement_group_table, remove_placement_group)
from orb.util.actor_pool import ActorPool  # noqa: F401


def list_named_actors(all_namespaces=False):
    """Ray's: the names of the live named actors in this job's namespace; with
    all_namespaces=True, a dict {"name", "namespace"} for each in any namespace."""
    from orb import _check_initialized, _core
    _check_initialized("list_named_actors")
    rows = [r for r in _core.list_state("actors", [("state", "!=", "DEAD")], 100000) if r.get("name")]
    if all_namespaces:
        return [{"name": r["name"], "namespace": r["namespace"]} for r in rows]
    namespace = _core.namespace()
    return [r["name"] for r in rows if r["namespace"] == namespace]


def get_node_ip_address():
    """Ray's: the address of the node this process runs on, as its `node:<address>`
    resource names it (a process not connected: this host's, as orb's nodes default to)."""
    from orb import _core, nodes
    if _core.is_initialized():
        node_id = _core.node_id()
        for node in nodes():
            if node["NodeID"] == node_id:
                return node["NodeManagerAddress"]
    return os.environ.get("ORB_NODE_IP") or "127.0.0.1"

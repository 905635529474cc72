"""Placement groups, as Ray's ray.util.placement_group: bundles of resources reserved
together, for tasks and actors to run in.

    pg = placement_group([{"CPU": 1}, {"CPU": 1}], strategy="STRICT_SPREAD")
    orb.get(pg.ready())
    Trainer.options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg, 0)).remote()
    remove_placement_group(pg)
"""
from orb import _core
from orb._options import deprecated_object_store_memory

STRATEGIES = {"PACK": 0, "SPREAD": 1, "STRICT_PACK": 2, "STRICT_SPREAD": 3}
VALID_PLACEMENT_GROUP_STRATEGIES = set(STRATEGIES)  # Ray's name


class PlacementGroup:
    def __init__(self, id_hex, bundle_specs=None):
        self.id = bytes.fromhex(id_hex)
        self.bundle_specs = bundle_specs or []

    @property
    def bundle_count(self):
        return len(self.bundle_specs)

    def ready(self):
        """An ObjectRef that becomes ready (True) once every bundle is reserved."""
        from orb.remote_function import RemoteFunction
        from orb.util.scheduling_strategies import PlacementGroupSchedulingStrategy
        strategy = PlacementGroupSchedulingStrategy(self, -1)
        return RemoteFunction(_ready_check, {"num_cpus": 0, "scheduling_strategy": strategy}).remote(self.id.hex())

    def wait(self, timeout_seconds=30):
        """True once the group is placed; False when `timeout_seconds` pass first."""
        return _core.wait_placement_group_ready(self.id.hex(), int(timeout_seconds * 1000))

    def __eq__(self, other):
        return isinstance(other, PlacementGroup) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return "PlacementGroup(%s)" % self.id.hex()


def _ready_check(id_hex):
    return True


def _validate_bundles(bundles):
    """Ray's check of a placement group's bundles, with its messages."""
    if not isinstance(bundles, (list, tuple)):
        raise ValueError("Placement group bundles must be a list, got %s." % type(bundles).__name__)
    if not bundles:
        raise ValueError("Placement group bundles must be a non-empty list of resource dictionaries. "
                         "For example: `[{\"CPU\": 1.0}, {\"GPU\": 1.0}]`. Got %r." % (bundles,))
    for bundle in bundles:
        if not isinstance(bundle, dict) or not all(isinstance(k, str) for k in bundle) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in bundle.values()):
            raise ValueError("Placement group bundles must be a non-empty list of resource dictionaries "
                             "(resource name to a number). Got %r." % (bundles,))
        if any(v < 0 for v in bundle.values()):
            raise ValueError("bundle amounts must be numbers >= 0, not %r" % (bundle,))
        if not bundle or all(v == 0 for v in bundle.values()):
            raise ValueError("Bundles cannot be an empty dictionary or resources with only 0 values. "
                             "Bundles: %r" % (bundles,))


def validate_placement_group(bundles, strategy="PACK", lifetime=None):
    """Ray's check of placement_group()'s arguments: ValueError naming the bad one."""
    _validate_bundles(bundles)
    if strategy not in VALID_PLACEMENT_GROUP_STRATEGIES:
        raise ValueError("Invalid placement group strategy %r: one of %s" % (strategy, ", ".join(STRATEGIES)))
    if lifetime not in (None, "detached", "non_detached"):
        raise ValueError("Placement group `lifetime` argument must be either `None` or 'detached', not %r"
                         % (lifetime,))


def placement_group(bundles, strategy="PACK", name="", lifetime=None):
    """Reserves `bundles` (a list of {resource: amount}) with `strategy` (PACK, SPREAD,
    STRICT_PACK, STRICT_SPREAD); lifetime="detached" outlives the job."""
    from orb import _check_initialized
    _check_initialized("placement_group")
    validate_placement_group(bundles, strategy, lifetime)
    if any("object_store_memory" in b for b in bundles):
        deprecated_object_store_memory("bundles")
    specs = [{str(k): float(v) for k, v in b.items() if k != "object_store_memory"} for b in bundles]
    id_hex = _core.create_placement_group(specs, STRATEGIES[strategy], name or "", lifetime == "detached")
    return PlacementGroup(id_hex, specs)


STATES = {0: "PENDING", 1: "CREATED", 2: "REMOVED", 3: "RESCHEDULING"}


def _group_of(data):
    return PlacementGroup(data["id"], [dict(b) for b in data["bundles"]])


def get_current_placement_group():
    """The placement group the current task or actor runs in, or None (Ray's)."""
    from orb import _check_initialized
    _check_initialized("get_current_placement_group")
    id_hex = _core.placement_group_id()
    if not id_hex:
        return None
    data = _core.lookup_placement_group(id_hex, "")
    return _group_of(data) if data else PlacementGroup(id_hex)


def get_placement_group(placement_group_name):
    """The live placement group with this name in the job's namespace; ValueError if none."""
    from orb import _check_initialized
    _check_initialized("get_placement_group")
    if not placement_group_name:
        raise ValueError("get_placement_group() needs a name")
    data = _core.lookup_placement_group("", placement_group_name)
    if data is None:
        raise ValueError("Failed to look up placement group with name: %s" % placement_group_name)
    return _group_of(data)


def placement_group_table(placement_group=None):
    """Every group the cluster knows (or one), by hex ID: its name, bundles, strategy and
    state, as Ray's ray.util.placement_group_table()."""
    from orb import _check_initialized
    _check_initialized("placement_group_table")
    strategies = {number: name for name, number in STRATEGIES.items()}

    def row(data):
        return {"placement_group_id": data["id"], "name": data["name"],
                "bundles": {i: dict(b) for i, b in enumerate(data["bundles"])},
                "strategy": strategies.get(data["strategy"], "UNKNOWN"), "state": STATES.get(data["state"], "UNKNOWN"),
                "is_detached": data["detached"]}
    if placement_group is not None:
        data = _core.lookup_placement_group(placement_group.id.hex(), "")
        return row(data) if data else {}
    return {data["id"]: row(data) for data in _core.list_placement_groups()}


def remove_placement_group(group):
    """Frees the group's bundles; what runs in them is stopped."""
    if not isinstance(group, PlacementGroup):
        raise TypeError("remove_placement_group() takes a PlacementGroup, not %s" % type(group).__name__)
    _core.remove_placement_group(group.id.hex())

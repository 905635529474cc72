"""Ray's ray.util, renamed: scheduling strategies and placement groups."""
from orb.util import scheduling_strategies  # noqa: F401
from orb.util.placement_group import PlacementGroup, placement_group, remove_placement_group  # noqa: F401

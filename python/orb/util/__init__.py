"""Ray's ray.util, renamed: scheduling strategies, placement groups, collectives, ActorPool."""
from orb import collective  # noqa: F401 (orb.util.collective, as ray.util.collective)
from orb.util import scheduling_strategies  # noqa: F401
from orb.util.placement_group import PlacementGroup, placement_group, remove_placement_group  # noqa: F401
from orb.util.actor_pool import ActorPool  # noqa: F401

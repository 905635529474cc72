"""Ray's ray.util, renamed: scheduling strategies, placement groups, collectives, ActorPool."""
from orb import collective  # noqa: F401 (orb.util.collective, as ray.util.collective)
from orb.util import scheduling_strategies  # noqa: F401
from orb.util.placement_group import (PlacementGroup, get_current_placement_group, get_placement_group,  # noqa: F401
                                      placement_group, placement_group_table, remove_placement_group)
from orb.util.actor_pool import ActorPool  # noqa: F401

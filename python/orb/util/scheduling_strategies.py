"""Where tasks and actors run, as Ray's ray.util.scheduling_strategies."""


class NodeAffinitySchedulingStrategy:
    """Run on the node with this (hex) ID; soft: elsewhere when it cannot."""

    def __init__(self, node_id, soft=False):
        self.node_id = node_id
        self.soft = soft


class PlacementGroupSchedulingStrategy:
    """Run in a placement group's bundle (-1: any of them). With
    placement_group_capture_child_tasks=True, the tasks and actors it starts without a
    placement of their own run in the group too; placement_group=None runs a task outside
    the group its parent captures it into."""

    def __init__(self, placement_group, placement_group_bundle_index=-1,
                 placement_group_capture_child_tasks=None):
        self.placement_group = placement_group
        self.placement_group_bundle_index = placement_group_bundle_index
        self.placement_group_capture_child_tasks = bool(placement_group_capture_child_tasks)

"""Options are checked where they are given, as Ray checks them: an unknown keyword or a bad
value is a ValueError, a value of the wrong type a TypeError naming the keyword. Nothing
here needs a cluster: @orb.remote and .options() check before anything runs."""
import pytest

import orb
from orb.util.placement_group import PlacementGroup
from orb.util.scheduling_strategies import PlacementGroupSchedulingStrategy


def work():
    return 1


class Worker:
    def run(self):
        return 1


@pytest.mark.parametrize("options", [
    {"num_cpus": "1"}, {"num_gpus": [1]}, {"memory": "1GB"}, {"max_retries": "3"}, {"max_retries": 1.5},
    {"name": 5}, {"resources": [("disk", 1)]}, {"resources": {"disk": "1"}}, {"runtime_env": "env"},
    {"scheduling_strategy": 5}, {"num_returns": 1.5}, {"placement_group": 3},
    {"placement_group_capture_child_tasks": "yes"}, {"retry_exceptions": "yes"}, {"num_cpus": True},
])
def test_a_task_option_of_the_wrong_type_is_a_type_error(options):
    with pytest.raises(TypeError, match=repr(next(iter(options))).strip("'")):
        orb.remote(**options)(work)
    with pytest.raises(TypeError):
        orb.remote(work).options(**options)


@pytest.mark.parametrize("options", [
    {"max_restarts": "1"}, {"max_task_retries": 0.5}, {"lifetime": 1}, {"max_concurrency": 1.5},
    {"get_if_exists": "yes"}, {"namespace": 3}, {"name": b"bytes"}, {"concurrency_groups": "io"},
])
def test_an_actor_option_of_the_wrong_type_is_a_type_error(options):
    with pytest.raises(TypeError, match=next(iter(options))):
        orb.remote(**options)(Worker)


@pytest.mark.parametrize("options, message", [
    ({"num_cpus": -1}, "num_cpus must be a number >= 0"),
    ({"num_gpus": -0.5}, "num_gpus must be a number >= 0"),
    ({"resources": {"CPU": 1}}, "use num_cpus"),
    ({"resources": {"GPU": 1}}, "use num_cpus / num_gpus"),
    ({"resources": {"disk": -1}}, "disk must be a number >= 0"),
    ({"max_retries": -2}, "max_retries must be an integer >= -1"),
    ({"num_returns": -1}, "num_returns must be a non-negative integer"),
    ({"scheduling_strategy": "NEAREST"}, "scheduling_strategy must be"),
    ({"num_cpu": 1}, "invalid option for a remote function: num_cpu"),
    ({"placement_group": PlacementGroup("00" * 18), "scheduling_strategy": "SPREAD"}, "not both"),
    ({"_generator_backpressure_num_objects": 0}, "backpressure_num_objects=0 is not allowed"),
])
def test_a_bad_task_option_value_is_a_value_error(options, message):
    with pytest.raises(ValueError, match=message):
        orb.remote(**options)(work)


@pytest.mark.parametrize("options, message", [
    ({"lifetime": "forever"}, "lifetime must be"),
    ({"max_restarts": -2}, "max_restarts must be an integer >= -1"),
    ({"max_concurrency": 0}, "max_concurrency must be an integer >= 1"),
    ({"max_task_retries": 2}, "max_task_retries cannot be set without max_restarts"),
    ({"get_if_exists": True}, "get_if_exists needs the actor's name"),
    ({"max_restart": 1}, "invalid option for an actor class: max_restart"),
])
def test_a_bad_actor_option_value_is_a_value_error(options, message):
    with pytest.raises(ValueError, match=message):
        orb.remote(**options)(Worker)


def test_a_bad_method_option_is_refused_where_the_method_is_marked():
    with pytest.raises(ValueError, match="backpressure_num_objects=0 is not allowed"):
        orb.method(_generator_backpressure_num_objects=0)


def test_good_options_are_accepted():
    group = PlacementGroup("00" * 18)
    orb.remote(num_cpus=0.5, num_gpus=0, memory=1 << 20, resources={"disk": 1}, max_retries=-1, name="w",
               num_returns=2, scheduling_strategy=PlacementGroupSchedulingStrategy(group, 0, True))(work)
    orb.remote(max_restarts=-1, max_task_retries=-1, max_concurrency=4, lifetime="detached", name="w",
               namespace="n", get_if_exists=True, concurrency_groups={"io": 2})(Worker)
    orb.remote(num_cpus=None, name=None, placement_group="default")(work)  # None: the default, as Ray's


def test_object_store_memory_on_an_actor_is_dropped_with_rays_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="'object_store_memory' for actors is deprecated"):
        orb.remote(object_store_memory=1)(Worker)
    with pytest.raises(TypeError, match="object_store_memory"):
        orb.remote(object_store_memory="1GB")(Worker)

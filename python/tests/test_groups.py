"""Concurrency groups (Ray's @ray.remote(concurrency_groups=...), @ray.method(concurrency_group=...))
and placement groups that capture what their tasks start (placement_group_capture_child_tasks),
as a Ray program uses them."""
import asyncio
import threading
import time

import pytest

import orb
from orb.exceptions import GetTimeoutError
from orb.util import get_current_placement_group, get_placement_group, placement_group, placement_group_table
from orb.util import remove_placement_group
from orb.util.scheduling_strategies import PlacementGroupSchedulingStrategy


@orb.remote(concurrency_groups={"io": 2, "compute": 1})
class Service:
    def __init__(self):
        self.lock = threading.Lock()
        self.running = {"io": 0, "compute": 0}
        self.most = {"io": 0, "compute": 0}
        self.order = []

    def _busy(self, group, seconds):
        """Sleeps, counting how many calls of `group` run at once; when it ended."""
        with self.lock:
            self.running[group] += 1
            self.most[group] = max(self.most[group], self.running[group])
        time.sleep(seconds)
        with self.lock:
            self.running[group] -= 1
        return time.time()

    @orb.method(concurrency_group="io")
    def fetch(self, seconds):
        return self._busy("io", seconds)

    @orb.method(concurrency_group="compute")
    def crunch(self, seconds):
        return self._busy("compute", seconds)

    def step(self, i):  # the default group: one call at a time, in order
        self.order.append(i)
        return i

    def most_at_once(self):
        return self.most

    def steps(self):
        return self.order


class Plain:
    def f(self):
        return 1


def test_each_group_runs_apart_within_its_limit(cluster):
    s = Service.remote()
    started = time.time()
    crunches = [s.crunch.remote(0.4) for _ in range(2)]
    fetches = [s.fetch.remote(0.4) for _ in range(4)]
    steps = [s.step.remote(i) for i in range(20)]
    assert orb.get(steps, timeout=30) == list(range(20))
    fetched = orb.get(fetches, timeout=30)
    crunched = orb.get(crunches, timeout=30)
    # The default group's 20 calls did not wait for the two groups' sleeps.
    assert orb.get(s.steps.remote(), timeout=30) == list(range(20))
    most = orb.get(s.most_at_once.remote(), timeout=30)
    assert most == {"io": 2, "compute": 1}
    assert max(crunched) - started >= 0.8  # one compute call at a time: 2 x 0.4 s
    assert max(fetched) - started < max(crunched) - started + 0.4  # io did not queue behind compute


def test_a_call_can_pick_its_group_and_a_bad_group_is_refused(cluster):
    s = Service.remote()
    # step belongs to the default group; .options() moves one call into "io".
    blocker = s.crunch.remote(1.0)
    moved = s.fetch.options(concurrency_group="compute").remote(0)
    with pytest.raises(GetTimeoutError):
        orb.get(moved, timeout=0.3)  # behind the compute call
    assert orb.get(s.step.options(concurrency_group="io").remote(7), timeout=5) == 7
    orb.get([blocker, moved], timeout=30)
    with pytest.raises(ValueError, match="no concurrency group 'gpu'"):
        s.step.options(concurrency_group="gpu").remote(1)
    with pytest.raises(ValueError, match="must run at least 1 call"):
        orb.remote(concurrency_groups={"io": 0})(Plain)
    with pytest.raises(TypeError, match="concurrency_groups must be a dict"):
        orb.remote(concurrency_groups=["io"])(Plain)
    with pytest.raises(TypeError, match="'concurrency_groups'"):
        orb.remote(concurrency_groups="io")(Plain)
    with pytest.raises(ValueError, match="cannot be set in .options()"):
        Service.options(concurrency_groups={"io": 1})
    with pytest.raises(ValueError, match="no concurrency group 'nope'"):
        @orb.remote(concurrency_groups={"io": 1})
        class Wrong:
            @orb.method(concurrency_group="nope")
            def f(self):
                pass


def test_a_handle_that_does_not_know_the_groups_gets_the_workers_answer(cluster):
    kept = Service.options(name="grouped").remote()  # noqa: F841 (a found handle does not keep it)
    stranger = orb.get_actor("grouped")  # no class here: the worker checks the group
    with pytest.raises(orb.exceptions.TaskError, match="no concurrency group 'gpu'"):
        orb.get(stranger.step.options(concurrency_group="gpu").remote(1), timeout=30)
    assert orb.get(stranger.step.remote(3), timeout=30) == 3


@orb.remote(concurrency_groups={"health": 1})
class AsyncServer:
    def __init__(self):
        self.release = None

    async def serve(self):  # the default group (1000 at once for an async actor)
        self.release = self.release or asyncio.Event()
        await self.release.wait()
        return "served"

    @orb.method(concurrency_group="health")
    async def ping(self):
        return "ok"

    @orb.method(concurrency_group="health")
    def finish(self):
        if self.release:
            self.release.set()


def test_async_actor_groups(cluster):
    a = AsyncServer.remote()
    busy = [a.serve.remote() for _ in range(5)]
    assert orb.get(a.ping.remote(), timeout=10) == "ok"  # answers while serve() calls wait
    with pytest.raises(GetTimeoutError):
        orb.get(busy, timeout=0.2)
    orb.get(a.finish.remote(), timeout=10)
    assert orb.get(busy, timeout=10) == ["served"] * 5


@orb.remote(num_cpus=1)
def child_group():
    group = get_current_placement_group()
    return group.id.hex() if group else None


@orb.remote(num_cpus=1)
def parent(leave=False):
    options = {"scheduling_strategy": PlacementGroupSchedulingStrategy(None)} if leave else {}
    return orb.get(child_group.options(**options).remote(), timeout=20), orb.get_runtime_context().get_placement_group_id()


@orb.remote
class Launcher:
    def launch(self):
        return orb.get(child_group.remote(), timeout=20)


def test_capture_child_tasks_puts_children_in_the_group(cluster):
    # Both CPUs of the cluster in the group: a child placed outside it could never run.
    pg = placement_group([{"CPU": 1}, {"CPU": 1}], name="trainers")
    assert pg.wait(30)
    captured = PlacementGroupSchedulingStrategy(pg, 0, placement_group_capture_child_tasks=True)
    child, own = orb.get(parent.options(scheduling_strategy=captured).remote(), timeout=30)
    assert child == pg.id.hex() and own == pg.id.hex()
    # The legacy spelling, and an actor whose methods start tasks.
    child, _ = orb.get(parent.options(placement_group=pg, placement_group_capture_child_tasks=True).remote(),
                       timeout=30)
    assert child == pg.id.hex()
    launcher = Launcher.options(num_cpus=1, scheduling_strategy=captured).remote()
    assert orb.get(launcher.launch.remote(), timeout=30) == pg.id.hex()
    orb.kill(launcher)
    # Without capture the child is placed outside the group: with every CPU in it, it waits.
    plain = PlacementGroupSchedulingStrategy(pg, 0)
    with pytest.raises(GetTimeoutError):
        orb.get(parent.options(scheduling_strategy=plain).remote(), timeout=3)
    remove_placement_group(pg)


def test_a_task_blocked_in_get_lends_its_bundle_cpu_to_the_children_it_waits_for(cluster):
    # One bundle of one CPU: the captured child can only run on the CPU its parent holds.
    pg = placement_group([{"CPU": 1}])
    assert pg.wait(30)
    captured = PlacementGroupSchedulingStrategy(pg, 0, placement_group_capture_child_tasks=True)
    child, own = orb.get(parent.options(scheduling_strategy=captured).remote(), timeout=30)
    assert child == pg.id.hex() and own == pg.id.hex()
    remove_placement_group(pg)


def test_leaving_the_captured_group_and_looking_groups_up(cluster):
    pg = placement_group([{"CPU": 1}], name="half")
    assert pg.wait(30)
    captured = PlacementGroupSchedulingStrategy(pg, 0, placement_group_capture_child_tasks=True)
    child, own = orb.get(parent.options(scheduling_strategy=captured).remote(leave=True), timeout=30)
    assert child is None and own == pg.id.hex()  # the child ran on the CPU outside the group
    assert orb.get(child_group.remote(), timeout=30) is None  # the driver captures nothing
    assert get_current_placement_group() is None
    found = get_placement_group("half")
    assert found == pg and found.bundle_specs == [{"CPU": 1.0}]
    with pytest.raises(ValueError, match="Failed to look up placement group with name: nothing"):
        get_placement_group("nothing")
    row = placement_group_table(pg)
    assert row["name"] == "half" and row["state"] == "CREATED" and row["bundles"] == {0: {"CPU": 1.0}}
    assert pg.id.hex() in placement_group_table()
    remove_placement_group(pg)


def test_object_store_memory_in_a_bundle_is_dropped_with_rays_deprecation_warning(cluster):
    with pytest.warns(DeprecationWarning, match="'object_store_memory' for bundles is deprecated"):
        group = placement_group([{"CPU": 1, "object_store_memory": 1 << 20}])
    assert group.bundle_specs == [{"CPU": 1.0}]
    assert group.wait(30)  # nothing reserved that no node offers
    remove_placement_group(group)

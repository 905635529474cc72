"""Actors on Python workers: ordered calls, names, restarts, async methods, handles."""
import asyncio
import os
import sys
import threading
import time

import pytest

import orb
from orb.exceptions import ActorDiedError, TaskError


@orb.remote
class Counter:
    def __init__(self, start=0):
        self.n = start

    def incr(self, by=1):
        self.n += by
        return self.n

    def pid(self):
        return os.getpid()

    def fail(self):
        raise KeyError("no such key")

    def restarted(self):
        return orb.get_runtime_context().was_current_actor_reconstructed

    def leave(self):
        orb.actor.exit_actor()


@orb.remote
class Gate:
    """Async methods run concurrently on the worker's event loop: wait() returns only
    once open() has run, which it could not while wait() held the actor."""

    def __init__(self):
        self.event = asyncio.Event()

    async def wait(self):
        await asyncio.wait_for(self.event.wait(), timeout=30)
        return "passed"

    async def open(self):
        self.event.set()
        return "opened"


@orb.remote
def use_counter(counter, times):
    return orb.get([counter.incr.remote() for _ in range(times)])[-1]


def test_calls_run_in_order(embedded):
    c = Counter.remote(10)
    assert orb.get([c.incr.remote() for _ in range(50)]) == list(range(11, 61))
    assert orb.get(c.incr.remote(by=5)) == 65
    assert orb.get(c.pid.remote()) != os.getpid()


def test_method_exception_leaves_the_actor_alive(embedded):
    c = Counter.remote()
    with pytest.raises(TaskError, match="no such key") as info:
        orb.get(c.fail.remote())
    assert isinstance(info.value, KeyError)
    assert orb.get(c.incr.remote()) == 1
    with pytest.raises(AttributeError, match="no method 'nope'"):
        c.nope.remote()


def test_named_actors_and_kill(embedded):
    c = Counter.options(name="counter-a").remote()
    orb.get(c.incr.remote())
    found = orb.get_actor("counter-a")
    assert orb.get(found.incr.remote()) == 2
    with pytest.raises(ValueError, match="Failed to look up actor"):
        orb.get_actor("no-such-actor")
    for bad in (None, "", "   "):
        with pytest.raises(ValueError, match="needs an actor's name"):
            orb.get_actor(bad)
    with pytest.raises(ValueError, match="Please use a different name"):
        orb.get(Counter.options(name="counter-a").remote().incr.remote(), timeout=30)
    with pytest.raises(ValueError, match="Actor name cannot be an empty string"):
        Counter.options(name="")
    with pytest.raises(ValueError, match="namespace cannot be an empty string"):
        Counter.options(name="x", namespace="")
    orb.kill(c)
    with pytest.raises(ActorDiedError):
        orb.get(c.incr.remote())


def test_restart_after_kill(embedded):
    c = Counter.options(max_restarts=1).remote()
    assert orb.get(c.incr.remote()) == 1
    assert orb.get(c.restarted.remote()) is False
    orb.kill(c, no_restart=False)
    # The constructor ran again: the state starts over, and the actor knows it restarted.
    assert orb.get(c.incr.remote(), timeout=60) == 1
    assert orb.get(c.restarted.remote()) is True


def test_exit_actor(embedded):
    c = Counter.remote()
    with pytest.raises(ActorDiedError):
        orb.get(c.leave.remote())
    with pytest.raises(ActorDiedError):
        orb.get(c.incr.remote())


def test_async_methods_run_concurrently(embedded):
    g = Gate.remote()
    waiting = g.wait.remote()
    assert orb.get(g.open.remote(), timeout=30) == "opened"
    assert orb.get(waiting, timeout=30) == "passed"


def test_handles_pass_to_tasks(embedded):
    c = Counter.remote()
    assert orb.get(use_counter.remote(c, 5)) == 5
    assert orb.get(c.incr.remote()) == 6


def test_bad_actor_input(embedded):
    with pytest.raises(ValueError, match="invalid option.*max_restart"):
        Counter.options(max_restart=1)
    with pytest.raises(ValueError, match="lifetime must be"):
        Counter.options(lifetime="forever")
    with pytest.raises(TypeError, match="use Counter.remote"):
        Counter()


def test_placement_groups(embedded):
    from orb.util import placement_group, remove_placement_group
    from orb.util.scheduling_strategies import PlacementGroupSchedulingStrategy
    pg = placement_group([{"CPU": 1}], strategy="STRICT_PACK")
    assert orb.get(pg.ready(), timeout=30) is True
    assert pg.wait(10)
    c = Counter.options(num_cpus=1, scheduling_strategy=PlacementGroupSchedulingStrategy(pg, 0)).remote()
    assert orb.get(c.incr.remote(), timeout=30) == 1
    remove_placement_group(pg)
    # Removal ends the group's actors soon after (asynchronously, as in Ray).
    deadline = time.time() + 30
    with pytest.raises(ActorDiedError):
        while time.time() < deadline:
            orb.get(c.incr.remote(), timeout=30)
            time.sleep(0.05)
    with pytest.raises(ValueError, match="Invalid placement group strategy 'TIGHT'"):
        placement_group([{"CPU": 1}], strategy="TIGHT")
    with pytest.raises(ValueError, match="non-empty list"):
        placement_group([])
    # Ray's checks and messages, also callable before creating a group.
    from orb.util.placement_group import validate_placement_group
    for bad, message in [("CPU", "must be a list"), ([{"CPU": "1"}], "resource dictionaries"),
                         ([{1: 1}], "resource dictionaries"), ([{"CPU": 0}], "only 0 values"),
                         ([{"CPU": -1}], ">= 0")]:
        with pytest.raises(ValueError, match=message):
            placement_group(bad)
    with pytest.raises(ValueError, match="lifetime"):
        validate_placement_group([{"CPU": 1}], lifetime="forever")
    validate_placement_group([{"CPU": 1, "custom": 2.5}], strategy="STRICT_SPREAD")


def test_detached_actor_outlives_its_driver(cli_cluster):
    orb.init(address=cli_cluster, namespace="keep")
    try:
        keeper = Counter.options(name="keeper", lifetime="detached").remote(5)
        goes = Counter.options(name="goes").remote(0)
        assert orb.get([keeper.incr.remote(), goes.incr.remote()]) == [6, 1]
    finally:
        orb.shutdown()
    orb.init(address=cli_cluster, namespace="keep")
    try:
        keeper = orb.get_actor("keeper")
        assert orb.get(keeper.incr.remote()) == 7  # the same actor, its state kept
        # The other actor ended with its job (soon after, as in Ray).
        deadline = time.time() + 20
        with pytest.raises(ValueError, match="Failed to look up actor"):
            while time.time() < deadline:
                orb.get_actor("goes")
                time.sleep(0.1)
        orb.kill(keeper)
    finally:
        orb.shutdown()


@orb.remote
class Placed:
    def node(self):
        return orb.get_runtime_context().get_node_id()


def test_actors_that_hold_no_resources_spread_over_the_nodes(cli_cluster):
    # As Ray's: an actor holding no resources may start on any node, so ten of them share
    # both nodes (orb gives the nodes turns).
    orb.init(address=cli_cluster)
    try:
        actors = [Placed.remote() for _ in range(10)]
        nodes = orb.get([a.node.remote() for a in actors], timeout=60)
        counts = sorted(nodes.count(n) for n in set(nodes))
        assert len(counts) == 2 and counts[0] >= 3, counts
    finally:
        orb.shutdown()


def test_actor_arguments_are_checked_at_the_call(embedded):
    with pytest.raises(TypeError, match=r"Counter\(start=0\): too many positional arguments"):
        Counter.remote(1, 2)
    c = Counter.remote(1)
    with pytest.raises(TypeError, match=r"Counter.incr\(by=1\): too many positional arguments"):
        c.incr.remote(1, 2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'step'"):
        c.incr.remote(step=2)
    assert orb.get(c.incr.remote(by=2)) == 3
    # A handle unpickled where its class is known checks its calls as the original does:
    # both share the class's one method table.
    import pickle
    copy = pickle.loads(pickle.dumps(c))
    assert copy._meta is c._meta
    with pytest.raises(TypeError, match=r"Counter.incr\(by=1\): too many positional arguments"):
        copy.incr.remote(1, 2)
    assert orb.get(copy.incr.remote(), timeout=30) == 4


def test_actor_pool_grows_and_shrinks_as_rays(embedded):
    from orb.util import ActorPool
    a, b = Counter.remote(0), Counter.remote(100)
    pool = ActorPool([a])
    assert pool.has_free()
    pool.submit(lambda actor, v: actor.incr.remote(v), 1)
    pool.submit(lambda actor, v: actor.incr.remote(v), 2)  # waits: the one actor is busy
    assert not pool.has_free() and pool.pop_idle() is None
    pool.push(b)  # the waiting submission starts on b
    assert sorted([pool.get_next_unordered(timeout=30), pool.get_next_unordered(timeout=30)]) == [1, 102]
    assert not pool.has_next()
    with pytest.raises(ValueError, match="already belongs"):
        pool.push(a)
    popped = {pool.pop_idle(), pool.pop_idle()}
    assert popped == {a, b} and pool.pop_idle() is None and not pool.has_free()


@orb.remote
class Pair:
    @orb.method(num_returns=2)
    def pair(self, v):
        return v, -v

    def nap(self, seconds):
        time.sleep(seconds)
        return seconds


def test_actor_pool_timeouts_multiple_returns_and_eager_map(embedded):
    from orb.util import ActorPool
    pool = ActorPool([Pair.remote(), Pair.remote()])
    for v in (1, 2, 3):
        pool.submit(lambda actor, v: actor.pair.remote(v), v)
    assert [pool.get_next(timeout=30) for _ in range(3)] == [[1, -1], [2, -2], [3, -3]]
    pool.submit(lambda actor, v: actor.nap.remote(v), 2)
    with pytest.raises(TimeoutError):
        pool.get_next_unordered(timeout=0.1)
    assert pool.get_next_unordered(timeout=0.1, ignore_if_timedout=True) is None
    # map drops what was submitted before it and submits every value at once.
    results = pool.map(lambda actor, v: actor.pair.remote(v), [4, 5])
    assert not pool.has_free()  # both submitted before the first result is asked for
    assert list(results) == [[4, -4], [5, -5]]
    with pytest.raises(StopIteration):
        pool.get_next()


@orb.remote
class SelfAware:
    def me(self):
        return orb.get_runtime_context().current_actor

    def ping(self):
        return "pong"

    def gpus(self):
        return orb.get_runtime_context().get_accelerator_ids()


def test_current_actor_is_a_handle_to_the_actor_itself(embedded):
    a = SelfAware.remote()
    me = orb.get(a.me.remote())
    assert me == a and me.actor_id == a.actor_id
    assert orb.get(me.ping.remote()) == "pong"
    assert orb.get(a.gpus.remote()) == {"GPU": []}
    with pytest.raises(RuntimeError, match="inside an actor"):
        orb.get_runtime_context().current_actor


class Base:
    KIND = "base"

    @staticmethod
    def double(x):
        return 2 * x


@orb.remote
class Described(Base):
    UNITS = "ms"

    @classmethod
    def units(cls):
        return cls.UNITS

    @staticmethod
    def triple(x):
        return 3 * x

    def describe(self):
        # The module-level name is the actor class: its attributes read through it, as in Ray.
        return Described.KIND, Described.UNITS, Described.double(2)


def test_class_attributes_static_and_class_methods(embedded):
    assert Described.UNITS == "ms" and Described.KIND == "base"
    assert Described.triple(2) == 6 and Described.units() == "ms"
    d = Described.remote()
    assert orb.get(d.describe.remote(), timeout=30) == ("base", "ms", 4)
    assert orb.get(d.triple.remote(5), timeout=30) == 15
    assert orb.get(d.units.remote(), timeout=30) == "ms"
    assert orb.get(d.double.remote(4), timeout=30) == 8
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        Described.missing


def test_rays_builtin_actor_methods_and_private_helpers(embedded):
    d = Described._remote(args=(), kwargs={}, name="described")  # Ray's Cls._remote(...)
    assert orb.get(d.__ray_ready__.remote(), timeout=30) is True
    assert "describe" in dir(d) and "UNITS" in dir(Described)
    assert [n for n in dir(d) if not n.startswith("_")] == ["describe", "double", "triple", "units"]  # as Ray's
    assert orb.runtime_context.get_runtime_context().get_job_id() == orb.get_runtime_context().get_job_id()
    # Ray's __ray_call__: a function of the actor's instance, run in the actor.
    assert orb.get(d.__ray_call__.remote(lambda self, x, y=1: (type(self).__name__, x * y), 3, y=2)) == \
        ("Described", 6)
    with pytest.raises(TypeError):
        d.__ray_call__()
    with pytest.raises(TypeError, match="takes a function"):
        orb.get(d.__ray_call__.remote(42), timeout=30)
    # Each process its own worker ID; the actor's is not the driver's.
    actor_worker = orb.get(d.__ray_call__.remote(lambda self: orb.get_runtime_context().get_worker_id()))
    assert len(actor_worker) == 32 and actor_worker != orb.get_runtime_context().get_worker_id()
    d.__ray_terminate__.remote()
    deadline = time.time() + 30
    with pytest.raises(ActorDiedError):
        while time.time() < deadline:  # the actor ends after the calls before it
            orb.get(d.describe.remote(), timeout=30)
            time.sleep(0.05)
    with pytest.raises(ValueError, match="orb.cancel"):
        orb.kill("not an actor")
    seen = []
    done = threading.Event()
    orb.put(41)._on_completed(lambda value: (seen.append(value), done.set()))
    assert done.wait(10) and seen == [41]


@orb.remote
class Reporter:
    def __init__(self):
        self.reported = set()  # an attribute named as a method: the method is still called

    def report(self, i):
        self.reported.add(i)

    def reported(self):
        return sorted(self.reported)


def test_a_method_is_found_on_the_class_even_when_an_attribute_shares_its_name(embedded):
    r = Reporter.remote()
    orb.get([r.report.remote(2), r.report.remote(1)])
    assert orb.get(r.reported.remote()) == [1, 2]


def test_actor_classes_cannot_be_subclassed_nor_async_functions_made_remote(embedded):
    from orb.actor import ActorClassInheritanceException  # a TypeError, as Ray's
    with pytest.raises(ActorClassInheritanceException, match="Inheriting from actor classes is not currently supported"):
        class Derived(Counter):
            pass
    with pytest.raises(ValueError, match="'async def' .* cannot be a remote function"):
        @orb.remote
        async def coroutine():
            return 1


@orb.remote(num_cpus=0)
class Sink:
    def take(self, value):
        return value


@orb.remote
def slow_value(seconds):
    time.sleep(seconds)
    return "slow"


@orb.remote
def through(sink, seconds):
    return orb.get(sink.take.remote(slow_value.remote(seconds)))


def test_a_call_waiting_for_its_argument_does_not_hold_other_callers_calls(embedded):
    # Each caller's call reaches the actor once its argument is made: a slow argument
    # of one caller never occupies the actor (Ray's dependency resolution).
    sink = Sink.remote()
    slow = through.remote(sink, 12)
    time.sleep(1)
    started = time.time()
    assert orb.get(through.remote(sink, 0), timeout=30) == "slow"
    assert time.time() - started < 8, "a call waited behind another caller's slow argument"
    assert orb.get(slow, timeout=60) == "slow"


@orb.remote
def pid_after_get(refs):
    assert all(len(v) == 1 << 21 for v in orb.get(refs))
    return os.getpid()


def test_a_task_whose_arguments_are_ready_keeps_its_cpu_in_get(embedded):
    # Its get finds them ready without waiting, so it lends no CPU, and no other
    # worker is started for the next tasks (Ray's test_release_resources_race).
    refs = [orb.put(b"x" * (1 << 21)) for _ in range(5)]
    pids = set(orb.get([pid_after_get.remote(refs) for _ in range(200)], timeout=120))
    assert len(pids) <= 2, pids


@orb.remote(num_cpus=0)
class Quitter:
    def quit(self):
        sys.exit(0)

    def hello(self):
        return "hello"


def test_sys_exit_in_an_actor_ends_the_actor(embedded):
    q = Quitter.remote()
    assert orb.get(q.hello.remote()) == "hello"
    with pytest.raises(ActorDiedError, match="INTENDED_USER_EXIT"):
        orb.get(q.quit.remote(), timeout=30)
    with pytest.raises(ActorDiedError):
        orb.get(q.hello.remote(), timeout=30)


@orb.remote(max_concurrency=2)
class Napper:
    def nap(self, seconds):
        time.sleep(seconds)
        return seconds

    def ping(self):
        return 1


@orb.remote
class Leaver:
    async def leave(self):
        orb.actor.exit_actor()

    def ping(self):
        return 1


def test_calls_cut_off_by_the_actors_death_say_why_it_died(embedded):
    napper = Napper.remote()
    running = napper.nap.remote(30)
    assert orb.get(napper.ping.remote(), timeout=30) == 1
    time.sleep(0.5)  # the nap is running
    orb.kill(napper)
    with pytest.raises(ActorDiedError, match=r"died while running this call.*killed by orb\.kill\(\)"):
        orb.get(running, timeout=30)
    # Calls after an exit_actor() say so, wherever they were (queued, sent, cut off).
    leaver = Leaver.remote()
    leaver.leave.remote()
    with pytest.raises(ActorDiedError, match="exit_actor"):
        orb.get([leaver.ping.remote() for _ in range(2000)], timeout=60)

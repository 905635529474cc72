"""Actors live as long as a handle does (Ray's rule): once no handle to a non-detached
actor (named or not) is left in any process, and the calls sent to it are done, its
process ends and its resources are free again."""
import os
import time

import pytest

import orb
from conftest import alive, wait_until


@orb.remote(num_cpus=1)
class Worker:
    def pid(self):
        return os.getpid()

    def slow(self, seconds, value):
        time.sleep(seconds)
        return value


@orb.remote(num_cpus=0)
class Keeper:
    def __init__(self):
        self.kept = None

    def keep(self, handles):
        self.kept = handles[0]
        return True

    def ask(self):
        return orb.get(self.kept.pid.remote())

    def drop(self):
        self.kept = None
        return True


@orb.remote(num_cpus=0)
def pid_through(handles):
    return orb.get(handles[0].pid.remote())


def cpus_free():
    return orb.available_resources().get("CPU", 0)


def test_deleting_the_last_handle_ends_the_actor_and_frees_its_cpu(cluster):
    w = Worker.remote()
    pid = orb.get(w.pid.remote())
    assert wait_until(lambda: cpus_free() == 1)
    del w
    assert wait_until(lambda: not alive(pid)), "the actor's process outlived its last handle"
    assert wait_until(lambda: cpus_free() == 2), "the actor's CPU was not freed"


def test_calls_sent_before_the_handle_went_still_finish(cluster):
    ref = Worker.remote().slow.remote(1.0, "done")  # the handle is gone at once
    assert orb.get(ref, timeout=30) == "done"


def test_a_handle_held_by_another_actor_keeps_the_actor_alive(cluster):
    w = Worker.remote()
    pid = orb.get(w.pid.remote())
    keeper = Keeper.remote()
    assert orb.get(keeper.keep.remote([w]))  # in a list: passed as a handle, not resolved
    del w
    time.sleep(1.0)
    assert alive(pid)
    assert orb.get(keeper.ask.remote()) == pid
    assert orb.get(keeper.drop.remote())
    assert wait_until(lambda: not alive(pid)), "the actor outlived the last handle, held by another actor"


def test_a_handle_passed_to_a_task_is_released_when_the_task_ends(cluster):
    w = Worker.remote()
    pid = orb.get(w.pid.remote())
    assert orb.get(pid_through.remote([w])) == pid
    del w
    assert wait_until(lambda: not alive(pid))


def test_detached_actors_are_not_collected_and_named_ones_are(cluster):
    named = Worker.options(name="lifetime-named", num_cpus=0).remote()
    named_pid = orb.get(named.pid.remote())
    detached = Worker.options(lifetime="detached", num_cpus=0).remote()
    detached_pid = orb.get(detached.pid.remote())
    detached_id = detached._actor_id
    # A handle found by name is a weak one, as in Ray: it does not keep the actor.
    found = orb.get_actor("lifetime-named")
    assert orb.get(found.pid.remote()) == named_pid
    assert "lifetime-named" in orb.util.list_named_actors()
    assert {"name": "lifetime-named", "namespace": orb.get_runtime_context().namespace} in \
        orb.util.list_named_actors(all_namespaces=True)
    del named, detached
    assert wait_until(lambda: not alive(named_pid))
    with pytest.raises(ValueError, match="Failed to look up actor"):
        deadline = time.time() + 20
        while time.time() < deadline:
            orb.get_actor("lifetime-named")
            time.sleep(0.1)
    assert "lifetime-named" not in orb.util.list_named_actors()
    time.sleep(1)
    assert alive(detached_pid)
    orb.kill(orb.actor.ActorHandle(detached_id, "Worker"))
    assert wait_until(lambda: not alive(detached_pid))


@orb.remote(num_cpus=0)
class Leaver:
    def leave(self):
        orb.actor.exit_actor()

    def hello(self):
        return "hello"


def test_a_call_sent_right_after_exit_actor_does_not_run_on_the_exited_actor(cluster):
    for _ in range(3):
        a = Leaver.remote()
        assert orb.get(a.hello.remote()) == "hello"
        left, after = a.leave.remote(), a.hello.remote()
        with pytest.raises(orb.exceptions.ActorDiedError, match="INTENDED_USER_EXIT"):  # Ray's word for it
            orb.get(left, timeout=30)
        for ref in (left, after):
            with pytest.raises(orb.exceptions.ActorDiedError):
                orb.get(ref, timeout=30)


@orb.remote(num_cpus=0)
def hello_through(handles):
    return orb.get(handles[0].hello.remote())


def test_a_busy_actor_called_from_another_process_is_not_taken_for_dead(cluster):
    # Longer than a caller's silence limit (10 s): the new caller's connection is
    # greeted and pinged while the actor's thread runs the long call.
    b = Busy.remote()
    assert orb.get(b.hello.remote()) == "hello"
    busy = b.work.remote(12)
    time.sleep(0.5)
    assert orb.get(hello_through.remote([b]), timeout=60) == "hello"
    assert orb.get(busy) == "worked"


@orb.remote(num_cpus=0)
class Busy:
    def work(self, seconds):
        time.sleep(seconds)
        return "worked"

    def hello(self):
        return "hello"


@orb.remote(num_cpus=0)
class WritesAtExit:
    def __init__(self, path):
        import atexit

        def write():
            with open(path, "w") as f:
                f.write("exited")
        atexit.register(write)

    def leave(self):
        orb.actor.exit_actor()

    def ready(self):
        return True


def test_a_graceful_end_runs_the_actors_atexit_handlers_and_a_kill_does_not(cluster, tmp_path):
    ends = {"exit_actor": lambda a: orb.wait([a.leave.remote()]),
            "__ray_terminate__": lambda a: orb.wait([a.__ray_terminate__.remote()]),
            "kill": orb.kill}
    for name, end in ends.items():
        path = str(tmp_path / name)
        a = WritesAtExit.remote(path)
        assert orb.get(a.ready.remote())
        end(a)
        if name == "kill":
            time.sleep(1)
            assert not os.path.exists(path)
        else:
            assert wait_until(lambda: os.path.exists(path)), name


@orb.remote
def owns_a_value():
    return [orb.put("kept"), os.getpid()]


def test_an_actor_never_takes_over_a_worker_that_ran_tasks(cluster):
    # The task's worker owns the value it put; were it to host the actor next, killing
    # the actor would lose the value with its owner (Ray gives actors fresh workers).
    inner, task_pid = orb.get(owns_a_value.remote(), timeout=30)
    actor = Worker.remote()
    assert orb.get(actor.pid.remote(), timeout=60) != task_pid
    orb.kill(actor)
    assert orb.get(inner, timeout=30) == "kept"


@orb.remote(num_cpus=0)
class Parent:
    def __init__(self):
        self.children = []

    def make_children(self, n):
        """Creates n Workers (1 CPU each); answers the pids of those that start soon."""
        self.children = [Worker.remote() for _ in range(n)]
        ready, _ = orb.wait([c.pid.remote() for c in self.children], num_returns=n, timeout=5)
        return orb.get(ready)


def test_the_actors_an_actor_created_end_with_it_started_or_pending(cluster):
    # As Ray's: a non-detached actor's owner is the process that created it. Three
    # children of 1 CPU on 2 CPUs: two run, one waits for a CPU.
    parent = Parent.remote()
    started = orb.get(parent.make_children.remote(3), timeout=60)
    assert len(started) == 2 and all(alive(p) for p in started)
    orb.kill(parent)
    assert wait_until(lambda: not any(alive(p) for p in started)), "children outlived the actor that created them"
    assert wait_until(lambda: cpus_free() == 2), "the children's CPUs were not freed"
    # The waiting child was ended too: it does not take the CPUs freed for new work.
    fresh = Worker.remote()
    assert orb.get(fresh.pid.remote(), timeout=60) not in started
    assert wait_until(lambda: cpus_free() == 1)

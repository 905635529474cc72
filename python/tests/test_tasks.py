"""Remote functions on Python workers: values, arguments, nested tasks, errors."""
import gc
import json
import os
import subprocess
import time
import threading

import numpy as np
import pytest

import orb
from orb.exceptions import GetTimeoutError, TaskError


@orb.remote
def square(x):
    return x * x


@orb.remote
def describe(*args, **kwargs):
    return {"args": args, "kwargs": kwargs, "pid": os.getpid()}


@orb.remote
def sum_of_squares(n):
    # Nested: a task that submits tasks and waits for them.
    return sum(orb.get([square.remote(i) for i in range(n)]))


@orb.remote
def what_arrived(value, nested):
    # A top-level ObjectRef arrives as its value; one inside a list stays a ref.
    return type(value).__name__, type(nested[0]).__name__, orb.get(nested[0])


@orb.remote
def hog(mib):
    return len(b"x" * (mib << 20))  # every byte written: resident


@orb.remote
def where():
    return orb.get_runtime_context().get_node_id()


@orb.remote
def in_orb_cgroup():
    with open("/proc/self/cgroup") as f:
        return "/orb-" in f.read()


@orb.remote
def fail(message):
    raise ValueError(message)


@orb.remote
def add_one(x):
    return x + 1


@orb.remote
def array_stats(a):
    return a.shape, float(a.sum()), a.flags.writeable


@orb.remote
def make_array(n):
    return np.arange(n, dtype=np.float64)


@orb.remote
def sleep(seconds):
    import time
    time.sleep(seconds)
    return seconds


def test_tasks_run_on_python_workers(embedded):
    assert orb.get([square.remote(i) for i in range(20)]) == [i * i for i in range(20)]
    out = orb.get(describe.remote(1, "two", three=3))
    assert out["args"] == (1, "two") and out["kwargs"] == {"three": 3}
    assert out["pid"] != os.getpid()


def test_lambdas_and_closures_travel(embedded):
    offset = 10
    f = orb.remote(lambda x: x + offset)
    assert orb.get(f.remote(5)) == 15


def test_nested_tasks(embedded):
    assert orb.get(sum_of_squares.remote(10)) == sum(i * i for i in range(10))


def test_refs_as_arguments(embedded):
    ref = orb.put(41)
    assert orb.get(add_one.remote(ref)) == 42
    assert orb.get(add_one.remote(add_one.remote(1))) == 3
    inner = orb.put("inner")
    assert orb.get(what_arrived.remote(ref, [inner])) == ("int", "ObjectRef", "inner")


def test_large_arrays_cross_through_the_store(embedded):
    a = np.ones(4 * 1024 * 1024 // 8)  # 4 MiB: put in the store, read in place by the worker
    shape, total, writeable = orb.get(array_stats.remote(a))
    assert shape == a.shape and total == a.size and writeable is False
    big = orb.get(make_array.remote(1 << 20))
    assert big[-1] == (1 << 20) - 1 and not big.flags.writeable


def test_remote_exception_with_traceback(embedded):
    ref = fail.remote("bad input 42")
    with pytest.raises(TaskError) as info:
        orb.get(ref)
    message = str(info.value)
    assert "bad input 42" in message and "ValueError" in message
    assert "Traceback" in message and "in fail" in message  # the remote traceback
    assert "_worker.py" not in message  # the user's frames, not orb's
    assert isinstance(info.value, ValueError)  # except ValueError catches it, as in Ray
    assert isinstance(info.value.cause, ValueError)
    # A task given a failed task's result fails with that error.
    with pytest.raises(ValueError, match="bad input 42"):
        orb.get(add_one.remote(ref))
    # The worker lives on.
    assert orb.get(square.remote(3)) == 9


def test_get_timeout_and_wait(embedded):
    slow = sleep.remote(30)
    with pytest.raises(GetTimeoutError):
        orb.get(slow, timeout=0.2)
    fast = square.remote(2)
    ready, not_ready = orb.wait([slow, fast], num_returns=1, timeout=20)
    assert ready == [fast] and not_ready == [slow]
    ready, not_ready = orb.wait([slow], timeout=0.1)
    assert ready == [] and not_ready == [slow]
    # As Ray's: a timed-out get is also a TimeoutError, and waiting on nothing is ([], []).
    with pytest.raises(TimeoutError):
        orb.get(slow, timeout=0.1)
    assert orb.wait([]) == ([], [])


def test_bad_input_is_a_clear_error(embedded):
    lock = threading.Lock()
    with pytest.raises(TypeError, match="cannot serialize argument 0 of square"):
        square.remote(lock)
    with pytest.raises(TypeError, match="cannot be called directly"):
        square(2)
    # Arguments the function cannot take fail at the call, before anything is sent.
    with pytest.raises(TypeError, match=r"square\(x\): too many positional arguments"):
        square.remote(1, 2)
    with pytest.raises(TypeError, match="missing a required argument: 'x'"):
        square.remote()
    with pytest.raises(TypeError, match="unexpected keyword argument 'y'"):
        square.remote(1, y=2)
    with pytest.raises(ValueError, match="invalid option.*num_cpu"):
        square.options(num_cpu=1)
    with pytest.raises(TypeError, match="'num_cpus' of a remote function must be int or float, not str"):
        square.options(num_cpus="two")
    with pytest.raises(TypeError, match="'max_retries'"):
        square.options(max_retries=1.5)
    with pytest.raises(ValueError, match="num_cpus must be a number >= 0"):
        square.options(num_cpus=-1)
    # An unpicklable result fails the task, with the type named; the worker lives on.
    with pytest.raises(TaskError, match="cannot serialize the result of .*lock"):
        orb.get(orb.remote(lambda: threading.Lock()).remote())
    assert orb.get(square.remote(4)) == 16


def test_options(embedded):
    assert orb.get(square.options(num_cpus=0.5, name="sq", max_retries=0).remote(5)) == 25
    node = orb.get_runtime_context().get_node_id()
    strategy = orb.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node, soft=False)
    assert orb.get(square.options(scheduling_strategy=strategy).remote(6)) == 36
    assert orb.get(square.options(scheduling_strategy="SPREAD").remote(7)) == 49


def test_a_task_past_its_memory_request_is_an_out_of_memory_error(embedded):
    if not orb.get(in_orb_cgroup.remote()):
        pytest.skip("workers are not in cgroups on this host (the raylet's log says why)")
    with pytest.raises(orb.exceptions.OutOfMemoryError, match="more memory than its limit of 256 MiB") as caught:
        orb.get(hog.options(memory=256 << 20, max_retries=0).remote(1024))
    assert isinstance(caught.value, orb.exceptions.WorkerCrashedError)
    assert orb.get(hog.options(memory=256 << 20).remote(16)) == 16 << 20
    assert orb.get(square.remote(3)) == 9


def test_memory_growth_retries_a_task_killed_for_memory_with_a_larger_request(embedded):
    if not orb.get(in_orb_cgroup.remote()):
        pytest.skip("workers are not in cgroups on this host (the raylet's log says why)")
    # 256 MiB, 1 GiB (both too small for 1 GiB and the interpreter), then 4 GiB.
    grown = hog.options(memory=256 << 20, memory_growth=4, max_retries=3)
    assert orb.get(grown.remote(1024)) == 1024 << 20
    with pytest.raises(ValueError, match="memory_growth must be more than 1"):
        orb.get(hog.options(memory=256 << 20, memory_growth=0.5).remote(1))


def test_tasks_on_a_cli_cluster(cli_cluster):
    orb.init(address=cli_cluster)
    try:
        nodes = {orb.get(describe.options(scheduling_strategy="SPREAD").remote())["pid"] for _ in range(8)}
        assert len(nodes) >= 1
        # Instant SPREAD tasks submitted at once go round both nodes, every time.
        for _ in range(3):
            refs = [where.options(scheduling_strategy="SPREAD").remote() for _ in range(40)]
            assert len(set(orb.get(refs))) == 2
        assert orb.get(sum_of_squares.remote(5)) == 30
    finally:
        orb.shutdown()


def _workers_of_job(address, job_id):
    out = subprocess.run([os.path.join(os.environ.get("ORB_TEST_BIN_DIR", ""), "orb"), "list", "workers",
                          "--format", "json", "--address", address],
                         check=True, capture_output=True, text=True, timeout=30).stdout
    return [w for w in json.loads(out) if w["job_id"] == job_id and not w["is_driver"]]


def test_node_resources_pin_work_to_the_head_or_a_node_as_in_ray(cli_cluster):
    orb.init(address=cli_cluster)
    try:
        ip = orb.util.get_node_ip_address()
        assert ip == "127.0.0.1"
        # Every node offers node:<its address> (both are on this host), the head alone
        # node:__internal_head__; orb status and the autoscaler leave them out of sums.
        assert orb.cluster_resources()["node:" + ip] == 2
        assert orb.cluster_resources()["node:__internal_head__"] == 1
        heads = [n["NodeID"] for n in orb.nodes() if "node:__internal_head__" in n["Resources"]]
        assert len(heads) == 1
        pinned = where.options(resources={"node:__internal_head__": 0.001}, scheduling_strategy="SPREAD")
        assert set(orb.get([pinned.remote() for _ in range(10)])) == set(heads)
    finally:
        orb.shutdown()


def test_prestarted_workers_are_up_before_the_first_task_and_run_it(cli_cluster):
    with pytest.raises(ValueError, match="prestart_workers"):
        orb.init(address=cli_cluster, prestart_workers=-1)
    orb.init(address=cli_cluster, prestart_workers=4)
    try:
        job = orb.get_runtime_context().get_job_id()
        # Each node (1 CPU each) starts one Python worker for the job, unasked.
        deadline = time.time() + 30
        while time.time() < deadline:
            workers = _workers_of_job(cli_cluster, job)
            if len(workers) == 2 and all(w["state"] == "IDLE" for w in workers):
                break
            time.sleep(0.2)
        assert len(workers) == 2, workers
        assert {w["language"] for w in workers} == {"PYTHON"}
        assert len({w["node_id"] for w in workers}) == 2
        # The first tasks run in them: no other worker starts.
        pids = {orb.get(describe.options(scheduling_strategy="SPREAD").remote())["pid"] for _ in range(4)}
        assert pids <= {w["pid"] for w in workers}
        assert len(_workers_of_job(cli_cluster, job)) == 2
    finally:
        orb.shutdown()


@orb.remote
class Keeper:
    def incr(self):
        return 1


def _task_names(address, name):
    out = subprocess.run([os.path.join(os.environ.get("ORB_TEST_BIN_DIR", ""), "orb"), "list", "tasks",
                          "--filter", "name=" + name, "--format", "json", "--address", address],
                         check=True, capture_output=True, text=True, timeout=30).stdout
    return [t["name"] for t in json.loads(out)]


def test_tasks_and_calls_carry_rays_plain_names_in_the_state_api(cli_cluster):
    orb.init(address=cli_cluster)
    try:
        keeper = Keeper.remote()
        assert orb.get([square.remote(3), keeper.incr.remote()]) == [9, 1]
        # As Ray shows them: the function's name, Class.__init__, Class.method.
        for name in ("square", "Keeper.__init__", "Keeper.incr"):
            deadline = time.time() + 20
            while time.time() < deadline and not _task_names(cli_cluster, name):
                time.sleep(0.3)
            assert _task_names(cli_cluster, name)[:1] == [name]
    finally:
        orb.shutdown()


@orb.remote(max_calls=1)
def pid_once():
    return os.getpid()


@orb.remote
def late_value(seconds):
    time.sleep(seconds)
    return "late"


@orb.remote(max_calls=1, max_retries=0)
def hands_out_a_child(seconds):
    return os.getpid(), late_value.remote(seconds)


def _ended(pid, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_max_calls_ends_a_worker_after_its_calls_once_nothing_it_owns_is_needed(cluster):
    pids = orb.get([pid_once.remote() for _ in range(4)], timeout=60)
    assert len(set(pids)) == 4  # each call in a fresh process
    assert all(_ended(pid) for pid in pids)
    # A worker whose child result the caller still holds waits for it to be let go.
    pid, child = orb.get(hands_out_a_child.remote(1.0), timeout=60)
    assert orb.get(child, timeout=60) == "late"
    time.sleep(1.0)
    assert not _ended(pid, timeout=0.5), "the worker ended while its object was still needed"
    del child
    gc.collect()
    assert _ended(pid), "the worker did not end once its object was let go"
    with pytest.raises(ValueError, match="max_calls must be an integer >= 0"):
        pid_once.options(max_calls=-1)

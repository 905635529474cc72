"""Idle workers: one idle past --idle-worker-timeout-ms exits, unless objects it owns
(objects it put, results of tasks it submitted) are still in use — they would be lost
with it, and whoever holds a ref to them would get OwnerDiedError."""
import os
import time

import pytest

import orb
from conftest import alive, started_cli_cluster, wait_until

IDLE_MS = 1500


@pytest.fixture(scope="module")
def idle_cluster():
    with started_cli_cluster(head_flags=["--idle-worker-timeout-ms", str(IDLE_MS)], more_nodes=0) as address:
        orb.init(address=address)
        yield
        orb.shutdown()


@orb.remote
def pid():
    return os.getpid()


@orb.remote
def put_and_share():
    """Puts an object this worker owns and hands a ref to it back (nested: not inlined)."""
    return [orb.put("made by pid %d" % os.getpid())], os.getpid()


def test_an_idle_worker_exits(idle_cluster):
    worker = orb.get(pid.remote())
    assert worker != os.getpid()
    assert wait_until(lambda: not alive(worker), timeout=20), "a worker idle past the timeout is still running"


def test_an_idle_worker_that_owns_objects_in_use_stays_until_they_are_released(idle_cluster):
    refs, owner = orb.get(put_and_share.remote())
    time.sleep(4 * IDLE_MS / 1000)  # past the timeout, more than once
    assert alive(owner), "the worker that owns an object in use was stopped for idling"
    assert orb.get(refs[0], timeout=30) == "made by pid %d" % owner
    del refs
    assert wait_until(lambda: not alive(owner), timeout=20), "the worker stayed after its objects were released"

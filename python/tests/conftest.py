"""pytest fixtures for orb's Python package: an embedded cluster (orb.init() with no
address, as a user's first program does) and a cluster started with the orb CLI."""
import contextlib
import os
import subprocess
import tempfile
import time

import pytest

import orb

BIN = os.environ.get("ORB_TEST_BIN_DIR", "")


@pytest.fixture(scope="module")
def cluster():
    """One embedded cluster of 2 CPUs for a test module's tests (a module may define its own)."""
    orb.init(num_cpus=2)
    yield
    orb.shutdown()


@pytest.fixture
def scratch():
    """A directory of its own for a test, where tasks leave marks the test reads."""
    with tempfile.TemporaryDirectory(prefix="orb-test-") as d:
        yield d


@pytest.fixture
def embedded():
    """orb.init() with no address: a GCS and a raylet for this test, stopped after it."""
    orb.init(num_cpus=2)
    yield
    orb.shutdown()


@contextlib.contextmanager
def started_cli_cluster(head_flags=(), more_nodes=1):
    """`orb start --head` with `head_flags`, plus `more_nodes` nodes of 1 CPU, in a temp
    root of their own, stopped at the end; yields the cluster's address."""
    root = tempfile.mkdtemp(prefix="orb-py-")
    env = dict(os.environ, ORB_TEMP_DIR=root)
    orb_cli = os.path.join(BIN, "orb")
    subprocess.run([orb_cli, "start", "--head", "--port", "0", "--num-cpus", "1", *head_flags], env=env,
                   check=True, stdout=subprocess.DEVNULL, timeout=60)
    old = os.environ.get("ORB_TEMP_DIR")
    try:
        with open(os.path.join(root, "session_latest", "address")) as f:
            address = f.read().strip()
        for _ in range(more_nodes):
            subprocess.run([orb_cli, "start", "--address", address, "--num-cpus", "1"], env=env, check=True,
                           stdout=subprocess.DEVNULL, timeout=60)
        os.environ["ORB_TEMP_DIR"] = root  # so the driver finds the cluster's token
        yield address
    finally:
        if old is None:
            os.environ.pop("ORB_TEMP_DIR", None)
        else:
            os.environ["ORB_TEMP_DIR"] = old
        subprocess.run([orb_cli, "stop"], env=env, timeout=60, stdout=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def cli_cluster():
    """`orb start --head` plus one more node, in a temp root of their own; its address."""
    with started_cli_cluster() as address:
        yield address


def alive(pid):
    """Whether process `pid` still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_until(condition, timeout=20):
    """Whether `condition()` held within `timeout` seconds, polled."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()

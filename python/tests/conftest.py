"""pytest fixtures for orb's Python package: an embedded cluster (orb.init() with no
address, as a user's first program does) and a cluster started with the orb CLI."""
import os
import subprocess
import tempfile

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


@pytest.fixture(scope="module")
def cli_cluster():
    """`orb start --head` plus one more node, in a temp root of their own; its address."""
    root = tempfile.mkdtemp(prefix="orb-py-")
    env = dict(os.environ, ORB_TEMP_DIR=root)
    orb_cli = os.path.join(BIN, "orb")
    subprocess.run([orb_cli, "start", "--head", "--port", "0", "--num-cpus", "1"], env=env, check=True,
                   stdout=subprocess.DEVNULL, timeout=60)
    with open(os.path.join(root, "session_latest", "address")) as f:
        address = f.read().strip()
    subprocess.run([orb_cli, "start", "--address", address, "--num-cpus", "1"], env=env, check=True,
                   stdout=subprocess.DEVNULL, timeout=60)
    old = os.environ.get("ORB_TEMP_DIR")
    os.environ["ORB_TEMP_DIR"] = root  # so the driver finds the cluster's token
    yield address
    if old is None:
        del os.environ["ORB_TEMP_DIR"]
    else:
        os.environ["ORB_TEMP_DIR"] = old
    subprocess.run([orb_cli, "stop"], env=env, timeout=60, stdout=subprocess.DEVNULL)

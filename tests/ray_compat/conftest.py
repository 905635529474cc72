"""Ray's common test fixtures, implemented on orb through the `ray` shim (shim/ray), and
the bounds of a compatibility run: a per-phase alarm (RAY_COMPAT_TEST_TIMEOUT seconds,
default 180, the limit Ray's own pytest.ini sets for each of its tests) that fails a test
which runs too long, a faulthandler hard stop behind it,
a minimal runner for `async def` tests (no pytest-asyncio here), and a JSON-lines log
of every test's outcome ($RAY_COMPAT_RESULTS) that run.py reads even when a process
had to be killed."""
import asyncio
import faulthandler
import inspect
import json
import os
import signal
import sys
import time

import pytest

import orb

TEST_TIMEOUT = float(os.environ.get("RAY_COMPAT_TEST_TIMEOUT", "180"))
RESULTS = os.environ.get("RAY_COMPAT_RESULTS")
# What orb.init takes; a fixture's request.param keys that it does not are dropped.
INIT_KEYS = {"address", "namespace", "num_cpus", "num_gpus", "resources", "object_store_memory",
             "ignore_reinit_error", "prestart_workers"}
DEFAULTS = {"num_cpus": 1, "object_store_memory": 150 * 1024 * 1024, "namespace": "default_test_namespace"}


class PerTestTimeout(Exception):
    pass


def _log(record):
    if RESULTS:
        with open(RESULTS, "a") as f:
            f.write(json.dumps(record) + "\n")


def _on_alarm(signum, frame):
    raise PerTestTimeout("ray_compat: test phase exceeded %ss" % TEST_TIMEOUT)


# Where the hard stop's stacks go (pytest captures stderr, so they would be lost).
_STACKS = open(RESULTS + ".stacks", "a") if RESULTS and RESULTS != os.devnull else sys.__stderr__


def _bounded(limit):
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    faulthandler.dump_traceback_later(limit + 60, exit=True, file=_STACKS)


def _unbound():
    signal.setitimer(signal.ITIMER_REAL, 0)
    faulthandler.cancel_dump_traceback_later()


def _phase(limit):
    """A hook wrapper that bounds one phase of a test (setup, call, teardown) to `limit` s."""
    @pytest.hookimpl(hookwrapper=True)
    def hook(item):
        _bounded(limit)
        try:
            yield
        finally:
            _unbound()
    return hook


pytest_runtest_setup = _phase(TEST_TIMEOUT)
pytest_runtest_call = _phase(TEST_TIMEOUT)
pytest_runtest_teardown = _phase(30)


def pytest_runtest_logstart(nodeid, location):
    _log({"event": "start", "nodeid": nodeid, "time": time.time()})
    if _STACKS is not sys.__stderr__:
        _STACKS.write("\n=== %s\n" % nodeid)
        _STACKS.flush()


def pytest_runtest_logreport(report):
    record = {"event": "report", "nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
              "duration": report.duration}
    if report.failed or report.skipped:
        text = str(report.longrepr) if report.longrepr is not None else ""
        record["longrepr"] = text[-6000:]
        record["timeout"] = "PerTestTimeout" in text
    _log(record)


def pytest_configure(config):
    config.addinivalue_line("markers", "asyncio: run an async test on an event loop (ray_compat's runner)")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """`async def` tests: run on an event loop (the `event_loop` fixture's if requested)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    funcargs = pyfuncitem.funcargs
    kwargs = {name: funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    loop = funcargs.get("event_loop") or asyncio.new_event_loop()
    try:
        loop.run_until_complete(pyfuncitem.obj(**kwargs))
    finally:
        if "event_loop" not in funcargs:
            loop.close()
    return True


@pytest.fixture
def event_loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def _init_kwargs(request, **base):
    kwargs = dict(DEFAULTS)
    kwargs.update(base)
    param = getattr(request, "param", None) or {}
    kwargs.update({k: v for k, v in param.items() if k in INIT_KEYS})
    if "object_store_memory" in kwargs and kwargs["object_store_memory"] is not None:
        kwargs["object_store_memory"] = int(kwargs["object_store_memory"])
    return kwargs


def _address_info():
    """What Ray's fixtures yield (ray.init's address info), as far as orb tells it."""
    try:
        address = orb.get_runtime_context().gcs_address
    except Exception:
        address = None
    return {"address": address, "gcs_address": address}


def _fresh(request, **base):
    if orb.is_initialized():
        orb.shutdown()
    orb.init(**_init_kwargs(request, **base))


def _down():
    try:
        orb.shutdown()
    except Exception:
        pass


@pytest.fixture
def shutdown_only():
    yield None
    _down()


def _cluster_fixture(**base):
    @pytest.fixture
    def fixture(request):
        _fresh(request, **base)
        yield _address_info()
        _down()
    return fixture


ray_start_regular = _cluster_fixture()
ray_start_1_cpu = _cluster_fixture(num_cpus=1)
ray_start_2_cpus = _cluster_fixture(num_cpus=2)
ray_start_4_cpus = _cluster_fixture(num_cpus=4)
ray_start_10_cpus = _cluster_fixture(num_cpus=10)
ray_start_regular_2_cpus = _cluster_fixture(num_cpus=2)


@pytest.fixture(scope="module")
def _ray_shared_module():
    yield
    _down()


def _shared_fixture(**base):
    """Ray's module-scoped cluster: started by the first test that asks for it, kept for
    the file (restarted if a test in between shut it down)."""
    @pytest.fixture
    def fixture(request, _ray_shared_module):
        if not orb.is_initialized():
            orb.init(**_init_kwargs(request, **base))
        yield _address_info()
    return fixture


ray_start_regular_shared = _shared_fixture()
ray_start_regular_shared_2_cpus = _shared_fixture(num_cpus=2)


def call_ray_start_context(request):
    """Ray's helper behind its call_ray_start* fixtures, which are out of scope (see
    classify.py): imported by some files at module level, never run."""
    raise NotImplementedError("ray shim: call_ray_start_context is a Ray conftest internal")

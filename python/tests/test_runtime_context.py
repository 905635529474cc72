"""What init() returns and what a task learns about where it runs, as in Ray: the init
context (address_info, dashboard_url, `with`), get_assigned_resources(), the lease's
GPUs in os.environ and OMP_NUM_THREADS set from num_cpus."""
import os

import pytest

import orb
from orb.util import placement_group, remove_placement_group
from orb.util.scheduling_strategies import PlacementGroupSchedulingStrategy


@pytest.fixture(scope="module")
def context():
    # The job's runtime environment reaches every task; Ray's internal tuning is accepted.
    ctx = orb.init(num_cpus=4, num_gpus=2, runtime_env={"env_vars": {"ORB_JOB_KEY": "job-wide"}},
                   _system_config={"object_spilling_threshold": 0.8})
    yield ctx
    orb.shutdown()


@orb.remote
def assigned():
    return orb.get_runtime_context().get_assigned_resources()


@orb.remote
def lease_env():
    return (os.environ.get("OMP_NUM_THREADS"), os.environ.get("CUDA_VISIBLE_DEVICES"),
            orb.get_runtime_context().get_accelerator_ids()["GPU"])


@orb.remote(num_cpus=1)
class Holder:
    def resources(self):
        return orb.get_runtime_context().get_assigned_resources()


def test_init_returns_the_clusters_context(context):
    info = context.address_info
    assert info["gcs_address"] == orb.get_runtime_context().gcs_address == context["gcs_address"]
    assert info["node_id"] == orb.get_runtime_context().get_node_id()
    assert info["node_ip_address"] and context.python_version.count(".") == 2
    assert context.dashboard_url is None or context.dashboard_url.rsplit(":", 1)[1].isdigit()
    again = orb.init(ignore_reinit_error=True)
    assert again.address_info == info


@orb.remote
def job_key():
    return os.environ.get("ORB_JOB_KEY")


@orb.remote
def chain(depth):
    """Each level waits for the next inside its task: it must lend its CPU meanwhile."""
    if depth == 0:
        return 0
    ready, _ = orb.wait([chain.remote(depth - 1)], timeout=60)
    return orb.get(ready[0]) + 1


def test_the_jobs_runtime_env_reaches_its_tasks(context):
    assert orb.get(job_key.remote(), timeout=30) == "job-wide"
    with pytest.raises(TypeError, match="_system_config must be a dict"):
        orb.init(_system_config=1, ignore_reinit_error=True)


@orb.remote
def package_value(name):
    import importlib
    return importlib.import_module(name).VALUE


def _package(root, name, value):
    os.makedirs(os.path.join(root, name))
    with open(os.path.join(root, name, "__init__.py"), "w") as f:
        f.write("VALUE = %r\n" % value)
    return os.path.join(root, name)


def test_py_modules_puts_packages_on_the_workers_module_path(context, tmp_path):
    import shutil
    import sys
    by_path = _package(str(tmp_path / "a"), "orb_pkg_by_path", 1)
    archive = shutil.make_archive(str(tmp_path / "pkg"), "zip", _package(str(tmp_path / "b"), "orb_pkg_zipped", 2)
                                  + "/..", "orb_pkg_zipped")
    _package(str(tmp_path / "c"), "orb_pkg_by_module", 3)
    sys.path.insert(0, str(tmp_path / "c"))
    try:
        import orb_pkg_by_module
    finally:
        sys.path.remove(str(tmp_path / "c"))
    env = {"py_modules": [by_path, archive, orb_pkg_by_module]}
    refs = [package_value.options(runtime_env=env).remote(name)
            for name in ("orb_pkg_by_path", "orb_pkg_zipped", "orb_pkg_by_module")]
    assert orb.get(refs, timeout=60) == [1, 2, 3]
    with pytest.raises(ValueError, match="orb does not fetch packages"):
        package_value.options(runtime_env={"py_modules": ["s3://bucket/pkg.zip"]}).remote("x")
    with pytest.raises(ValueError, match="neither a package directory nor"):
        package_value.options(runtime_env={"py_modules": [str(tmp_path / "missing")]}).remote("x")


def test_a_task_blocked_in_get_or_wait_lends_its_cpu(context):
    # Six levels deep on four CPUs: each level waits (in wait, then get) for the next.
    assert orb.get(chain.remote(6), timeout=60) == 6


def test_assigned_resources_are_what_the_task_or_actor_holds(context):
    assert orb.get(assigned.remote(), timeout=30) == {"CPU": 1.0}
    assert orb.get(assigned.options(num_cpus=2, num_gpus=1).remote(), timeout=30) == {"CPU": 2.0, "GPU": 1.0}
    holder = Holder.remote()
    assert orb.get(holder.resources.remote(), timeout=30) == {"CPU": 1.0}
    orb.kill(holder)
    group = placement_group([{"CPU": 1}])
    assert group.wait(30)
    inside = assigned.options(scheduling_strategy=PlacementGroupSchedulingStrategy(group, 0))
    assert orb.get(inside.remote(), timeout=30) == {"CPU": 1.0}  # plain names in a group too
    remove_placement_group(group)
    assert orb.get_runtime_context().get_assigned_resources() == {}  # the driver holds nothing


@pytest.mark.skipif("OMP_NUM_THREADS" in os.environ, reason="OMP_NUM_THREADS is set for this run: workers keep it")
def test_omp_threads_follow_num_cpus_and_gpus_show_in_os_environ(context):
    threads, visible, gpus = orb.get(lease_env.options(num_cpus=2, num_gpus=1).remote(), timeout=30)
    assert threads == "2" and visible in ("0", "1") and gpus == [visible]
    threads, visible, gpus = orb.get(lease_env.options(num_cpus=0.5).remote(), timeout=30)
    assert threads == "1" and visible is None and gpus == []  # a later lease without GPUs


def test_init_as_a_context_manager():
    orb.shutdown()  # the module's cluster goes; the next module's fixture starts its own
    with orb.init(num_cpus=1) as ctx:
        assert orb.is_initialized() and ctx.address_info["gcs_address"]
    assert not orb.is_initialized()


JOB_CONFIG_DRIVER = """
import orb
from orb.job_config import JobConfig

class Outer:
    @orb.remote
    class Inner:  # nested, in __main__: its workers load it from the driver's directory
        def get(self):
            return "OK"

config = JobConfig(code_search_path=[%r], ray_namespace="jobs", default_actor_lifetime="detached",
                   metadata={"team": "rl"})
orb.init(num_cpus=1, job_config=config)
inner = Outer.Inner.remote()
print(orb.get(inner.get.remote(), timeout=60), orb.get_runtime_context().namespace)
actor_id = inner._actor_id
del inner  # detached by the job's default: not collected with its handle
import time; time.sleep(2)
print(orb.get(orb.actor.handle_of(actor_id, Outer.Inner._cls).get.remote(), timeout=30))
"""


def test_a_job_config_sets_code_search_path_namespace_and_actor_lifetime(tmp_path):
    import subprocess
    import sys
    from orb.job_config import JobConfig
    driver = tmp_path / "driver with space.py"
    driver.write_text(JOB_CONFIG_DRIVER % str(tmp_path))
    out = subprocess.run([sys.executable, str(driver)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["OK", "jobs", "OK"]
    with pytest.raises(ValueError, match="default_actor_lifetime"):
        JobConfig(default_actor_lifetime="forever")
    with pytest.raises(TypeError, match="code_search_path"):
        JobConfig(code_search_path="/one/dir")
    with pytest.raises(TypeError, match="job_config must be"):
        orb.init(job_config={"code_search_path": []})

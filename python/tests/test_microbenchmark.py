"""python -m orb.microbenchmark prints one JSON line per figure, named as in Ray's
microbenchmark, with the target beside each targeted figure (printed, not asserted)."""
import json
import subprocess
import sys

from orb.microbenchmark import TARGETS


def test_microbenchmark_prints_figures_beside_targets():
    out = subprocess.run([sys.executable, "-m", "orb.microbenchmark", "--quick", "--no-cpp"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    figures = {f["metric"]: f for f in map(json.loads, out.stdout.splitlines())}
    for metric in ("single_client_tasks_sync", "single_client_tasks_async", "1_1_actor_calls_sync",
                   "1_1_actor_calls_async", "single_client_put_calls", "single_client_get_calls",
                   "single_client_put_gigabytes", "single_client_get_gigabytes", "single_client_generator_items",
                   "1_1_actor_generator_items", "1_1_async_actor_calls_async"):
        assert figures[metric]["value"] > 0 and figures[metric]["language"] == "python", metric
    for metric, target in TARGETS.items():
        assert figures[metric]["target"] == target
        assert figures[metric]["meets_target"] == (figures[metric]["value"] >= target)

"""orb's Python microbenchmark: `python -m orb.microbenchmark [--quick] [--no-cpp]`.

Prints JSON lines named as in Ray's microbenchmark (whose published figures come from
Python), each with the target this project holds it to (Ray's 64-core figures), and then
the same workloads through the C++ API (orb_microbenchmark, orb_actor_benchmark, when
found beside the orb command or in $ORB_BIN_DIR) so that the Python overhead shows.
Figures are printed, never asserted.
"""
import argparse
import json
import os
import shutil
import subprocess
import time

import numpy as np

import orb

# Ray 2.x's published Python figures (64 cores): what the 2-core figures here are held to.
TARGETS = {
    "single_client_tasks_sync": 800,
    "single_client_tasks_async": 5800,
    "1_1_actor_calls_sync": 1800,
    "1_1_actor_calls_async": 7500,
    "single_client_put_gigabytes": 5.0,
}


def report(metric, value, unit, seconds, language="python"):
    line = {"metric": metric, "value": round(value, 3), "unit": unit, "seconds": round(seconds, 3),
            "language": language}
    if metric in TARGETS and language == "python":
        line["target"] = TARGETS[metric]
        line["meets_target"] = value >= TARGETS[metric]
    print(json.dumps(line), flush=True)


def measure(metric, unit, ops, body):
    start = time.perf_counter()
    body()
    seconds = time.perf_counter() - start
    report(metric, ops / seconds, unit, seconds)


@orb.remote
def noop(x):
    return x


@orb.remote
class Echo:
    def echo(self, x):
        return x


def python_figures(scale):
    orb.get([noop.remote(0), noop.remote(1)])  # warm: the workers are started
    n = 1000 // scale
    measure("single_client_tasks_sync", "tasks/s", n, lambda: [orb.get(noop.remote(i)) for i in range(n)])
    n = 10000 // scale
    measure("single_client_tasks_async", "tasks/s", n, lambda: orb.get([noop.remote(i) for i in range(n)]))
    actor = Echo.remote()
    orb.get(actor.echo.remote(0))
    n = 1000 // scale
    measure("1_1_actor_calls_sync", "calls/s", n, lambda: [orb.get(actor.echo.remote(i)) for i in range(n)])
    n = 10000 // scale
    measure("1_1_actor_calls_async", "calls/s", n, lambda: orb.get([actor.echo.remote(i) for i in range(n)]))
    n = 2000 // scale
    measure("single_client_put_calls", "calls/s", n, lambda: [orb.put(i) for i in range(n)])
    ref = orb.put(1)
    measure("single_client_get_calls", "calls/s", n, lambda: [orb.get(ref) for _ in range(n)])
    big = np.ones(100 * 2**20 // 8)  # 100 MiB, as in Ray's put_gigabytes
    puts = max(1, 10 // scale)
    measure("single_client_put_gigabytes", "GB/s", big.nbytes * puts / 1e9,
            lambda: [orb.put(big) for _ in range(puts)])
    target = np.empty_like(big)
    start = time.perf_counter()
    for _ in range(puts):
        np.copyto(target, big)
    seconds = time.perf_counter() - start
    report("memcpy_prefaulted_gigabytes", big.nbytes * puts / 1e9 / seconds, "GB/s", seconds)
    value = orb.put(big)
    measure("single_client_get_gigabytes", "GB/s", big.nbytes * puts / 1e9,
            lambda: [orb.get(value) for _ in range(puts)])


def find_binary(name):
    candidates = []
    if os.environ.get("ORB_BIN_DIR"):
        candidates.append(os.path.join(os.environ["ORB_BIN_DIR"], name))
    cli = shutil.which("orb")
    if cli:
        candidates.append(os.path.join(os.path.dirname(os.path.realpath(cli)), name))
    found = shutil.which(name)
    if found:
        candidates.append(found)
    return next((c for c in candidates if os.access(c, os.X_OK)), None)


def cpp_figures(quick):
    for name in ("orb_microbenchmark", "orb_actor_benchmark"):
        binary = find_binary(name)
        if not binary:
            print(json.dumps({"note": "%s not found (set ORB_BIN_DIR to a build's bin/): no C++ figures" % name}))
            continue
        out = subprocess.run([binary] + (["--quick"] if quick else []), capture_output=True, text=True, timeout=600)
        for line in out.stdout.splitlines():
            try:
                figure = json.loads(line)
            except ValueError:
                continue
            if "metric" in figure:
                figure["language"] = "cpp"
                print(json.dumps(figure), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the work (a smoke run)")
    parser.add_argument("--no-cpp", action="store_true", help="skip the C++ figures")
    args = parser.parse_args()
    orb.init(object_store_memory=1 << 30)
    try:
        python_figures(10 if args.quick else 1)
    finally:
        orb.shutdown()
    if not args.no_cpp:
        cpp_figures(args.quick)


if __name__ == "__main__":
    main()

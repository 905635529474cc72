"""orb's Python microbenchmark: `python -m orb.microbenchmark [--quick] [--no-cpp]`.

Prints JSON lines named as in Ray's microbenchmark (whose published figures come from
Python), measured as Ray measures them (a warm-up, then the mean rate over timed
windows), each with the target this project holds it to (Ray's 64-core figures), and then
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


def report(metric, value, unit, seconds, language="python", sd=None):
    line = {"metric": metric, "value": round(value, 3), "unit": unit, "seconds": round(seconds, 3),
            "language": language}
    if sd is not None:
        line["sd"] = round(sd, 3)
    if metric in TARGETS and language == "python":
        line["target"] = TARGETS[metric]
        line["meets_target"] = value >= TARGETS[metric]
    print(json.dumps(line), flush=True)


class Timer:
    """Ray's timeit: `fn` runs for a warm-up, then in `windows` windows of `window_s`
    seconds each; the figure is the mean rate over the windows (with its deviation)."""

    def __init__(self, warmup_s, windows, window_s):
        self.warmup_s, self.windows, self.window_s = warmup_s, windows, window_s

    def measure(self, metric, unit, fn, multiplier=1):
        mean, sd, total = self.rate(fn, multiplier)
        report(metric, mean, unit, total, sd=sd)

    def rate(self, fn, multiplier=1):
        """The mean rate of `fn` (times `multiplier`) over the windows, its deviation,
        and the seconds the windows took."""
        start = time.perf_counter()
        count = 0
        while time.perf_counter() - start < self.warmup_s:
            fn()
            count += 1
        step = count // 10 + 1
        rates, total = [], 0.0
        for _ in range(self.windows):
            start = time.perf_counter()
            count = 0
            while time.perf_counter() - start < self.window_s:
                for _ in range(step):
                    fn()
                count += step
            seconds = time.perf_counter() - start
            total += seconds
            rates.append(multiplier * count / seconds)
        return float(np.mean(rates)), float(np.std(rates)), total


@orb.remote
def noop(x):
    return x


@orb.remote
class Echo:
    def echo(self, x):
        return x


@orb.remote
def count_up(n):
    for i in range(n):
        yield i


@orb.remote
class Streamer:
    def tokens(self, n):
        for i in range(n):
            yield i


@orb.remote
class AsyncEcho:
    async def echo(self, x):
        return x


def drain(generator):
    for ref in generator:
        orb.get(ref)


def python_figures(timer):
    orb.get([noop.remote(0), noop.remote(1)])  # warm: the workers are started
    timer.measure("single_client_tasks_sync", "tasks/s", lambda: orb.get(noop.remote(0)))
    timer.measure("single_client_tasks_async", "tasks/s", lambda: orb.get([noop.remote(i) for i in range(1000)]),
                  multiplier=1000)
    actor = Echo.remote()
    orb.get(actor.echo.remote(0))
    timer.measure("1_1_actor_calls_sync", "calls/s", lambda: orb.get(actor.echo.remote(0)))
    timer.measure("1_1_actor_calls_async", "calls/s",
                  lambda: orb.get([actor.echo.remote(i) for i in range(1000)]), multiplier=1000)
    # Streaming generators: every item read as it comes (token-by-token serving's path).
    timer.measure("single_client_generator_items", "items/s", lambda: drain(count_up.remote(1000)), multiplier=1000)
    streamer = Streamer.remote()
    timer.measure("1_1_actor_generator_items", "items/s", lambda: drain(streamer.tokens.remote(1000)),
                  multiplier=1000)
    async_actor = AsyncEcho.remote()
    orb.get(async_actor.echo.remote(0))
    timer.measure("1_1_async_actor_calls_async", "calls/s",
                  lambda: orb.get([async_actor.echo.remote(i) for i in range(1000)]), multiplier=1000)
    timer.measure("single_client_put_calls", "calls/s", lambda: orb.put(0))
    ref = orb.put(1)
    timer.measure("single_client_get_calls", "calls/s", lambda: orb.get(ref))
    big = np.ones(100 * 2**20 // 8)  # 100 MiB, as in Ray's put_gigabytes
    timer.measure("single_client_put_gigabytes", "GB/s", lambda: orb.put(big), multiplier=big.nbytes / 1e9)
    target = np.empty_like(big)
    timer.measure("memcpy_prefaulted_gigabytes", "GB/s", lambda: np.copyto(target, big), multiplier=big.nbytes / 1e9)
    value = orb.put(big)
    timer.measure("single_client_get_gigabytes", "GB/s", lambda: orb.get(value), multiplier=big.nbytes / 1e9)


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
    parser.add_argument("--quick", action="store_true", help="short windows (a smoke run)")
    parser.add_argument("--no-cpp", action="store_true", help="skip the C++ figures")
    args = parser.parse_args()
    orb.init(object_store_memory=1 << 30)
    try:
        python_figures(Timer(0.2, 2, 0.5) if args.quick else Timer(1.0, 4, 2.0))
    finally:
        orb.shutdown()
    if not args.no_cpp:
        cpp_figures(args.quick)


if __name__ == "__main__":
    main()

"""orb beside Dask: the same Python workloads on both, in the same run, on this machine.

    python3 bench/dask_compare.py [--quick]

Each workload runs on orb (an embedded cluster) and on a Dask LocalCluster of as many
single-threaded worker processes as there are cores, timed the same way (Ray's timeit:
a warm-up, then the mean rate over windows). One JSON line per (workload, system), then
one with orb's figure over Dask's. Figures are printed, never asserted.

    tasks_sync        submit one task and wait for its result, repeatedly
    tasks_async       submit 1,000 tasks, then gather them
    actor_calls_sync  one call on an actor and wait for it, repeatedly (Dask: actor=True)
    actor_calls_async 1,000 calls on an actor, then wait for them
    put_gigabytes     store a 100 MiB numpy array (Dask: scatter)
    get_calls         read back a small stored value
"""
import argparse
import json
import os
import sys

import numpy as np

import orb
from orb.microbenchmark import Timer


def noop(x):
    return x


class Echo:
    def echo(self, x):
        return x


def orb_workloads():
    remote_noop = orb.remote(noop)
    actor = orb.remote(Echo).remote()
    orb.get([remote_noop.remote(0), remote_noop.remote(1), actor.echo.remote(0)])
    small = orb.put(1)
    big = np.ones(100 * 2**20 // 8)
    return {
        "tasks_sync": (lambda: orb.get(remote_noop.remote(0)), 1, "tasks/s"),
        "tasks_async": (lambda: orb.get([remote_noop.remote(i) for i in range(1000)]), 1000, "tasks/s"),
        "actor_calls_sync": (lambda: orb.get(actor.echo.remote(0)), 1, "calls/s"),
        "actor_calls_async": (lambda: orb.get([actor.echo.remote(i) for i in range(1000)]), 1000, "calls/s"),
        "put_gigabytes": (lambda: orb.put(big), big.nbytes / 1e9, "GB/s"),
        "get_calls": (lambda: orb.get(small), 1, "calls/s"),
    }


def dask_workloads(client):
    actor = client.submit(Echo, actor=True).result()
    actor.echo(0).result()
    small = client.scatter(1)
    big = np.ones(100 * 2**20 // 8)
    return {
        "tasks_sync": (lambda: client.submit(noop, 0, pure=False).result(), 1, "tasks/s"),
        "tasks_async": (lambda: client.gather(client.map(noop, range(1000), pure=False)), 1000, "tasks/s"),
        "actor_calls_sync": (lambda: actor.echo(0).result(), 1, "calls/s"),
        "actor_calls_async": (lambda: [f.result() for f in [actor.echo(i) for i in range(1000)]], 1000, "calls/s"),
        "put_gigabytes": (lambda: client.scatter(big, direct=True), big.nbytes / 1e9, "GB/s"),
        "get_calls": (lambda: small.result(), 1, "calls/s"),
    }


def run(system, workloads, timer, figures):
    for name, (fn, multiplier, unit) in workloads.items():
        mean, sd, seconds = timer.rate(fn, multiplier)
        figures.setdefault(name, {})[system] = mean
        print(json.dumps({"metric": name, "system": system, "value": round(mean, 3), "sd": round(sd, 3),
                          "unit": unit, "seconds": round(seconds, 3)}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short windows (a smoke run)")
    args = parser.parse_args()
    timer = Timer(0.2, 2, 0.5) if args.quick else Timer(1.0, 3, 2.0)
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        print(json.dumps({"note": "Dask is not installed (Debian: python3-distributed): orb figures only"}))
        Client = None
    figures = {}
    orb.init(object_store_memory=1 << 30)
    try:
        run("orb", orb_workloads(), timer, figures)
    finally:
        orb.shutdown()
    if Client is None:
        return 0
    cores = os.cpu_count() or 2
    with LocalCluster(n_workers=cores, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        run("dask", dask_workloads(client), timer, figures)
    for name, by_system in figures.items():
        if by_system.get("dask"):
            print(json.dumps({"metric": name + "_orb_over_dask", "value": round(by_system["orb"] / by_system["dask"], 2),
                              "unit": "ratio"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

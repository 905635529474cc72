"""A Python program written against Ray's Python API shape (ray renamed orb), outside
orb's source tree: run by python_install_test with a pip-installed orb, on the embedded
default (no address) and on a 3-node `orb start` cluster (--address).

    python tour.py [--address HOST:PORT] [--xlang-lib DIR] [--detached-phase create|check]
"""
import argparse
import asyncio
import os
import sys
import time

import numpy as np

import orb
import tour_module


@orb.remote
def square(x):
    return x * x


@orb.remote
def fan_out(n):
    return sum(orb.get([square.remote(i) for i in range(n)]))


@orb.remote
def where():
    time.sleep(1.0)  # long enough that the tasks run side by side, even while workers start
    return orb.get_runtime_context().get_node_id()


@orb.remote
def sleepy(seconds):
    time.sleep(seconds)
    return seconds


@orb.remote
class Counter:
    def __init__(self):
        self.n = 0

    def incr(self):
        self.n += 1
        return self.n

    def restarted(self):
        return orb.get_runtime_context().was_current_actor_reconstructed


@orb.remote
class Mailbox:
    def __init__(self):
        self.ready = asyncio.Event()
        self.item = None

    async def take(self):
        await asyncio.wait_for(self.ready.wait(), timeout=60)
        return self.item

    async def give(self, item):
        self.item = item
        self.ready.set()


@orb.remote
class Trainer:
    def __init__(self, rank):
        self.rank = rank

    def step(self, group):
        import torch
        import orb.collective as col
        grad = torch.full((1024,), float(self.rank + 1))
        col.allreduce(grad, group_name=group)
        return grad.sum().item()


def check(condition, what):
    if not condition:
        raise SystemExit("FAILED: " + what)
    print("ok:", what, flush=True)


def in_shared_memory(address):
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            low, high = (int(x, 16) for x in fields[0].split("-"))
            if low <= address < high:
                return len(fields) > 5 and fields[5].startswith("/dev/shm")
    return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--address")
    parser.add_argument("--xlang-lib")
    parser.add_argument("--detached-phase", choices=["create", "check"])
    args = parser.parse_args()
    orb.init(address=args.address, code_search_path=[args.xlang_lib] if args.xlang_lib else None)

    if args.detached_phase == "check":
        keeper = orb.get_actor("keeper", namespace="tour")
        check(orb.get(keeper.incr.remote()) == 2, "a detached actor outlives the driver that made it")
        orb.kill(keeper)
        orb.shutdown()
        return

    check(orb.get([square.remote(i) for i in range(10)]) == [i * i for i in range(10)], "tasks")
    check(orb.get(fan_out.remote(10)) == 285, "nested tasks")
    nodes = set(orb.get([where.options(scheduling_strategy="SPREAD").remote() for _ in range(6)]))
    if args.address:
        check(len(nodes) == len(orb.nodes()) == 3, "SPREAD tasks ran on all 3 nodes")

    c = Counter.options(name="tour-counter", max_restarts=1).remote()
    check(orb.get([c.incr.remote() for _ in range(5)]) == [1, 2, 3, 4, 5], "actor calls in order")
    check(orb.get(orb.get_actor("tour-counter").incr.remote()) == 6, "a named actor")
    orb.kill(c, no_restart=False)
    check(orb.get(c.incr.remote(), timeout=60) == 1 and orb.get(c.restarted.remote()),
          "an actor restarted after a kill")
    if args.detached_phase == "create":
        keeper = Counter.options(name="keeper", namespace="tour", lifetime="detached").remote()
        check(orb.get(keeper.incr.remote()) == 1, "a detached actor")

    box = Mailbox.remote()
    taken = box.take.remote()
    orb.get(box.give.remote("parcel"))
    check(orb.get(taken, timeout=60) == "parcel", "async actor methods run concurrently")

    big = np.arange(100 * 2**20 // 8, dtype=np.float64)  # 100 MB
    back = orb.get(orb.put(big))
    check(not back.flags.writeable and back[-1] == big[-1], "a 100 MB array comes back read-only")
    check(in_shared_memory(back.__array_interface__["data"][0]), "and shares the store's memory")

    slow = sleepy.remote(30)
    ready, not_ready = orb.wait([slow, square.remote(3)], num_returns=1, timeout=30)
    check(len(ready) == 1 and not_ready == [slow], "wait returns what is ready")
    try:
        orb.get(slow, timeout=0.5)
        check(False, "get times out")
    except orb.exceptions.GetTimeoutError:
        check(True, "get times out")

    try:
        orb.get(tour_module.explode.remote(7))
        check(False, "a remote exception")
    except ValueError as e:
        check("exploded with 7" in str(e) and "in explode" in str(e), "a remote exception with its traceback")

    if args.xlang_lib:
        check(orb.get(orb.cpp_function("Plus").remote(2, 3)) == 5, "Python calls C++")
        check(orb.get(orb.cpp_function("TriplePython").remote(5)) == 15, "C++ calls Python")

    a, b = Trainer.remote(0), Trainer.remote(1)
    import orb.collective as col
    col.create_collective_group([a, b], 2, [0, 1], backend="gloo", group_name="tour")
    check(orb.get([a.step.remote("tour"), b.step.remote("tour")], timeout=120) == [3 * 1024.0] * 2,
          "a torch allreduce between two actors")
    orb.shutdown()
    print("tour done", flush=True)


if __name__ == "__main__":
    sys.exit(main())

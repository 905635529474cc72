"""Collectives from Python between actors: Gloo on numpy arrays and torch tensors, in
place, over the same backends and shared-memory path as C++."""
import numpy as np
import pytest

import orb
import orb.collective as col
from orb.exceptions import CollectiveError, TaskError


@orb.remote
class Member:
    def __init__(self, rank):
        self.rank = rank

    def join(self, world_size, group):
        col.init_collective_group(world_size, self.rank, backend="gloo", group_name=group)
        return col.get_rank(group), col.get_collective_group_size(group)

    def numpy_calls(self, group):
        r = self.rank
        summed = np.full(1000, r + 1, dtype=np.float32)
        col.allreduce(summed, group_name=group)
        biggest = np.array([r * 10], dtype=np.int64)
        col.allreduce(biggest, group_name=group, op=col.ReduceOp.MAX)
        sent = np.arange(4, dtype=np.float64) * (r + 1)
        col.broadcast(sent, src_rank=1, group_name=group)
        gathered = [np.zeros(3, dtype=np.int32) for _ in range(2)]
        col.allgather(gathered, np.full(3, r, dtype=np.int32), group_name=group)
        scattered = np.zeros(2, dtype=np.float32)
        col.reducescatter(scattered, [np.full(2, 1.0 + r, dtype=np.float32), np.full(2, 10.0 * (r + 1), dtype=np.float32)],
                          group_name=group)
        reduced = np.full(5, r + 1, dtype=np.float32)
        col.reduce(reduced, dst_rank=0, group_name=group)
        col.barrier(group)
        if r == 0:
            col.send(np.array([7, 8, 9], dtype=np.uint8), 1, group_name=group)
            received = None
        else:
            received = np.zeros(3, dtype=np.uint8)
            col.recv(received, 0, group_name=group)
        return {"sum": summed, "max": biggest, "bcast": sent, "gathered": gathered, "scattered": scattered,
                "reduced": reduced, "received": received}

    def torch_allreduce(self, group):
        import torch
        t = torch.full((256,), float(self.rank + 1))
        col.allreduce(t, group_name=group)
        return t.tolist()

    def read_only(self, group):
        col.allreduce(orb.get(orb.put(np.ones(4))), group_name=group)


def _pair(group):
    a, b = Member.remote(0), Member.remote(1)
    col.create_collective_group([a, b], 2, [0, 1], backend="gloo", group_name=group)
    return a, b


def test_numpy_collectives(embedded):
    a, b = _pair("np")
    ra, rb = orb.get([a.numpy_calls.remote("np"), b.numpy_calls.remote("np")], timeout=120)
    for r in (ra, rb):
        assert (r["sum"] == 3).all() and r["max"][0] == 10
        assert list(r["bcast"]) == [0.0, 2.0, 4.0, 6.0]
        assert [list(g) for g in r["gathered"]] == [[0, 0, 0], [1, 1, 1]]
    assert list(ra["scattered"]) == [3.0, 3.0] and list(rb["scattered"]) == [30.0, 30.0]
    assert (ra["reduced"] == 3).all()
    assert list(rb["received"]) == [7, 8, 9]


def test_torch_allreduce_between_actors(embedded):
    pytest.importorskip("torch")
    a, b = _pair("torch")
    ra, rb = orb.get([a.torch_allreduce.remote("torch"), b.torch_allreduce.remote("torch")], timeout=120)
    assert ra == rb == [3.0] * 256


def test_init_in_each_member(embedded):
    a, b = Member.remote(0), Member.remote(1)
    assert orb.get([a.join.remote(2, "joined"), b.join.remote(2, "joined")], timeout=120) == [(0, 2), (1, 2)]


def test_collective_bad_input(embedded):
    with pytest.raises(ValueError, match="backend must be"):
        col.init_collective_group(2, 0, backend="mpi", group_name="x")
    with pytest.raises(ValueError, match="rank must be"):
        col.init_collective_group(2, 5, group_name="x")
    with pytest.raises(TypeError, match="numpy array or a torch tensor"):
        col.allreduce([1, 2, 3], group_name="x")
    with pytest.raises(CollectiveError):
        col.allreduce(np.ones(3), group_name="never-made")
    a, b = _pair("ro")
    with pytest.raises(TaskError, match="read-only"):
        orb.get(a.read_only.remote("ro"), timeout=60)

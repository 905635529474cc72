"""Collective communication from Python (Ray's ray.util.collective, renamed): the C++
collectives — Gloo on CPUs, NCCL on GPUs, shared memory between members on one node —
in place on numpy arrays and torch tensors.

    import orb.collective as col
    col.init_collective_group(world_size=2, rank=rank, backend="gloo", group_name="g")  # in each member
    col.allreduce(grads, group_name="g")                         # grads: numpy array or torch tensor

Or from the driver, over actor handles: col.create_collective_group(actors, 2, [0, 1],
group_name="g"); each actor joins on its first collective call. Failures (a member died,
mismatched sizes or dtypes, a timeout, an unknown group) raise orb.exceptions.CollectiveError.
"""
import enum

from orb import _core

__all__ = ["ReduceOp", "init_collective_group", "create_collective_group", "destroy_collective_group",
           "allreduce", "broadcast", "allgather", "reducescatter", "reduce", "barrier", "send", "recv",
           "get_rank", "get_collective_group_size", "is_group_initialized"]

DEFAULT_TIMEOUT_S = 1800.0


class ReduceOp(enum.IntEnum):
    SUM = 0
    PRODUCT = 1
    MIN = 2
    MAX = 3


_BACKENDS = {"gloo": 0, "nccl": 1}
# orb::collective::DType
_NUMPY_DTYPES = {"float32": 0, "float64": 1, "float16": 2, "int32": 4, "int64": 5, "uint8": 6}
_TORCH_DTYPES = {"torch.float32": 0, "torch.float64": 1, "torch.float16": 2, "torch.bfloat16": 3,
                 "torch.int32": 4, "torch.int64": 5, "torch.uint8": 6}


def _backend(name):
    key = str(getattr(name, "value", name)).lower()
    if key not in _BACKENDS:
        raise ValueError("backend must be \"gloo\" or \"nccl\", not %r" % (name,))
    return _BACKENDS[key]


def _describe(tensor, what, writable=True):
    """(address, count, dtype, device) of a numpy array or torch tensor."""
    module = type(tensor).__module__
    if module.startswith("torch"):
        if not tensor.is_contiguous():
            raise ValueError("%s: the tensor must be contiguous (call .contiguous())" % what)
        dtype = _TORCH_DTYPES.get(str(tensor.dtype))
        if dtype is None:
            raise TypeError("%s: tensors of %s are not supported (%s)" % (what, tensor.dtype, ", ".join(_TORCH_DTYPES)))
        device = -1 if tensor.device.type == "cpu" else tensor.device.index
        return tensor.data_ptr(), tensor.numel(), dtype, device
    if module.startswith("numpy"):
        if not tensor.flags.c_contiguous:
            raise ValueError("%s: the array must be C-contiguous (numpy.ascontiguousarray)" % what)
        if writable and not tensor.flags.writeable:
            raise ValueError("%s works in place, and this array is read-only (an array from orb.get is): "
                             "copy it first (numpy.array(x))" % what)
        dtype = _NUMPY_DTYPES.get(tensor.dtype.name)
        if dtype is None:
            raise TypeError("%s: arrays of %s are not supported (%s)" % (what, tensor.dtype, ", ".join(_NUMPY_DTYPES)))
        return tensor.__array_interface__["data"][0], tensor.size, dtype, -1
    raise TypeError("%s takes a numpy array or a torch tensor, not %s" % (what, type(tensor).__name__))


def init_collective_group(world_size, rank, backend="gloo", group_name="default", timeout=DEFAULT_TIMEOUT_S):
    """Joins `group_name` as `rank` of `world_size` (every member calls this)."""
    if not isinstance(world_size, int) or world_size < 1:
        raise ValueError("world_size must be a positive integer, not %r" % (world_size,))
    if not isinstance(rank, int) or not 0 <= rank < world_size:
        raise ValueError("rank must be an integer in [0, %d), not %r" % (world_size, rank))
    _core.collective_init_group(group_name, world_size, rank, _backend(backend), float(timeout))


def create_collective_group(actors, world_size, ranks, backend="gloo", group_name="default",
                            timeout=DEFAULT_TIMEOUT_S):
    """From the driver: `actors` form `group_name`, actors[i] being rank ranks[i]."""
    actors = list(actors)
    if len(actors) != world_size or sorted(ranks) != list(range(world_size)):
        raise ValueError("create_collective_group needs world_size actors and the ranks 0..world_size-1 once each")
    ordered = [a for _, a in sorted(zip(ranks, actors), key=lambda pair: pair[0])]
    _core.collective_create_group_of_actors([a._actor_id.hex() for a in ordered], group_name, _backend(backend),
                                            float(timeout))


def destroy_collective_group(group_name="default"):
    _core.collective_destroy_group(group_name)


def is_group_initialized(group_name="default"):
    try:
        _core.collective_rank(group_name)
        return True
    except Exception:
        return False


def get_rank(group_name="default"):
    return _core.collective_rank(group_name)


def get_collective_group_size(group_name="default"):
    return _core.collective_world_size(group_name)


def allreduce(tensor, group_name="default", op=ReduceOp.SUM):
    """Every member's `tensor` becomes the reduction of all of them."""
    _core.collective_allreduce(*_describe(tensor, "allreduce"), group_name, int(op))


def broadcast(tensor, src_rank=0, group_name="default"):
    _core.collective_broadcast(*_describe(tensor, "broadcast"), group_name, int(src_rank))


def reduce(tensor, dst_rank=0, group_name="default", op=ReduceOp.SUM):
    """`dst_rank`'s tensor becomes the reduction of all of them."""
    _core.collective_reduce(*_describe(tensor, "reduce"), group_name, int(dst_rank), int(op))


def send(tensor, dst_rank, group_name="default"):
    _core.collective_send(*_describe(tensor, "send", writable=False), group_name, int(dst_rank))


def recv(tensor, src_rank, group_name="default"):
    _core.collective_recv(*_describe(tensor, "recv"), group_name, int(src_rank))


def barrier(group_name="default"):
    _core.collective_barrier(group_name)


def _empty_like(tensor, count):
    if type(tensor).__module__.startswith("torch"):
        import torch
        return torch.empty(count, dtype=tensor.dtype, device=tensor.device)
    import numpy
    return numpy.empty(count, dtype=tensor.dtype)


def allgather(tensor_list, tensor, group_name="default"):
    """tensor_list[r] becomes rank r's `tensor` (a list of world_size tensors shaped like it)."""
    size = get_collective_group_size(group_name)
    if len(tensor_list) != size:
        raise ValueError("allgather: tensor_list needs %d tensors (the group's size), not %d" % (size, len(tensor_list)))
    address, count, dtype, device = _describe(tensor, "allgather", writable=False)
    out = _empty_like(tensor, count * size)
    out_address, out_count, _, _ = _describe(out, "allgather")
    _core.collective_allgather(address, count, out_address, out_count, dtype, device, group_name)
    for r, target in enumerate(tensor_list):
        target.reshape(-1)[:] = out[r * count:(r + 1) * count]


def reducescatter(tensor, tensor_list, group_name="default", op=ReduceOp.SUM):
    """`tensor` becomes the reduction over members of their tensor_list[rank]."""
    size = get_collective_group_size(group_name)
    if len(tensor_list) != size:
        raise ValueError("reducescatter: tensor_list needs %d tensors (the group's size), not %d"
                         % (size, len(tensor_list)))
    if type(tensor).__module__.startswith("torch"):
        import torch
        joined = torch.cat([t.reshape(-1) for t in tensor_list]).contiguous()
    else:
        import numpy
        joined = numpy.concatenate([numpy.asarray(t).reshape(-1) for t in tensor_list])
    in_address, in_count, dtype, device = _describe(joined, "reducescatter")
    out_address, out_count, out_dtype, _ = _describe(tensor, "reducescatter")
    if out_dtype != dtype:
        raise TypeError("reducescatter: tensor and tensor_list differ in dtype")
    _core.collective_reducescatter(in_address, in_count, out_address, out_count, dtype, device, group_name, int(op))

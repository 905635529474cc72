"""How orb lays out a Python value in the object store.

A value is pickled (cloudpickle, so lambdas and classes defined in __main__ travel)
with protocol 5; buffers that support it (numpy arrays, torch tensors through numpy,
bytearrays, PickleBuffer) go out of band, so that they are copied once, into the
value's final place, and come back as views over that memory:

    magic "ORBP" | version (1 byte) | flags (1 byte) | 2 bytes zero | buffer count (u32)
    | pickle length (u64) | per buffer: offset (u64), length (u64)
    | the pickle stream | each buffer at a 64-byte aligned offset

Flags: bit 0 set: the value is a task's failure — (function name, traceback text, the
exception or None, its type's name) — raised again where it is read.

Reading gives read-only views: an array that came from the store is not writeable
(as in Ray), and it keeps the object pinned in the store while it lives.

A torch CPU tensor crosses as its numpy array, so a large one is copied once, into the
store. torch has no read-only tensors, so one read from the store lies on a private
(copy-on-write) mapping of the store's pages: reading it shares the store's memory, and
writing to it (in place, as Ray programs do with their tensors) copies just the pages it
touches, for this process, never changing the object others read. Small tensors (in
values that live in the process's heap) are rebuilt as copies.
"""
import io
import os
import pickle
import struct
import traceback

import cloudpickle

from orb import _core

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
MAGIC = b"ORBP"
VERSION = 1
FLAG_ERROR = 1
_HEAD = struct.Struct("<4sBB2xIQ")
_SPAN = struct.Struct("<QQ")
ALIGN = 64


def _aligned(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


# Values up to this size live inline (in the process's heap, as the core keeps them);
# larger ones in the store, and larger task arguments go there first.
INLINE_BYTES = 100 * 1024


def _reduce_tensor(tensor):
    """A plain CPU tensor as its numpy array (out of band, zero-copy); None: torch's own
    pickling (GPU, sparse, quantized, requiring grad, subclasses, dtypes numpy lacks)."""
    import torch
    if (type(tensor) is not torch.Tensor or tensor.device.type != "cpu" or tensor.layout != torch.strided
            or tensor.requires_grad or tensor.is_quantized or tensor.dtype in (torch.bfloat16, torch.complex32)):
        return None
    return _rebuild_tensor, (tensor.detach().resolve_conj().resolve_neg().numpy(),)


def _rebuild_tensor(array):
    import numpy
    import torch
    if array.flags.writeable:  # pickled in band (not contiguous): already a copy
        return torch.from_numpy(array)
    private = _core.private_view(array) if array.nbytes >= INLINE_BYTES else None
    if private is None:
        return torch.from_numpy(array.copy())
    return torch.from_numpy(numpy.ndarray(array.shape, array.dtype, buffer=private, strides=array.strides))


class _Pickler(cloudpickle.CloudPickler):
    def reducer_override(self, obj):
        if type(obj).__module__ == "torch" and type(obj).__name__ == "Tensor":
            reduced = _reduce_tensor(obj)
            if reduced is not None:
                return reduced
        return super().reducer_override(obj)


def _dumps(value, buffer_callback):
    out = io.BytesIO()
    _Pickler(out, protocol=5, buffer_callback=buffer_callback).dump(value)
    return out.getvalue()


# Values of these types hold no code, no buffers and no refs: the C pickler writes them
# as cloudpickle would, without making a pickler (most task arguments and results).
_PLAIN = frozenset((type(None), bool, int, float, str, bytes))


class Serialized:
    """A value ready to be written: its `size`, `write(memoryview)` to put it there, and
    `refs`, the ObjectRefs pickled inside it (held until the value is stored)."""

    def __init__(self, value, what="value", flags=0):
        self._buffers = []
        if type(value) in _PLAIN:
            self._stream = pickle.dumps(value, protocol=5)
            self.refs = _core.HeldRefs()
        else:
            try:
                self._stream = _dumps(value, self._buffers.append)
            except Exception as e:
                _core.take_serialized_refs()  # released: the value goes nowhere
                raise TypeError("orb cannot serialize %s of type %s: %s" % (what, type(value).__name__, e)) from e
            self.refs = _core.take_serialized_refs()
        self._flags = flags
        self._raws = [b.raw() for b in self._buffers]
        header = _HEAD.size + _SPAN.size * len(self._raws)
        self._spans = []
        end = header + len(self._stream)
        for raw in self._raws:
            start = _aligned(end)
            self._spans.append((start, raw.nbytes))
            end = start + raw.nbytes
        self.size = end

    def write(self, view):
        """Writes the value into `view` (a writable memoryview of exactly `size` bytes)."""
        view = view.cast("B")
        _HEAD.pack_into(view, 0, MAGIC, VERSION, self._flags, len(self._raws), len(self._stream))
        at = _HEAD.size
        for start, length in self._spans:
            _SPAN.pack_into(view, at, start, length)
            at += _SPAN.size
        view[at:at + len(self._stream)] = self._stream
        for (start, length), raw in zip(self._spans, self._raws):
            view[start:start + length] = raw.cast("B")
        for b in self._buffers:
            b.release()


def serialize_error(function_name, error):
    """A task's failure as a value: the exception (when it pickles), its traceback and
    where it happened, raised again by whoever reads the value."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        tb = tb.tb_next  # orb's own frames (the executor's) first: the user's code is what matters
    text = "".join(traceback.format_exception(type(error), error, tb))
    cause = error
    try:
        cloudpickle.dumps(error)
    except Exception:
        cause = None
    _core.take_serialized_refs()
    return Serialized((function_name, text, cause, type(error).__name__), flags=FLAG_ERROR)


class RawValue:
    """Bytes already serialized (msgpack, for C++), in the shape of Serialized."""

    def __init__(self, data):
        self._data = data
        self.size = len(data)
        self.refs = _core.HeldRefs()

    def write(self, view):
        view.cast("B")[:] = self._data


def deserialize(buffer):
    """The value held by `buffer` (anything with the buffer protocol), read in place.
    A failed task's value raises its error (orb.exceptions.TaskError, also an instance
    of the original exception's class where it can be). A value made by C++ (msgpack)
    is decoded as such."""
    view = memoryview(buffer).cast("B")
    if view.nbytes < _HEAD.size or bytes(view[:4]) != MAGIC:
        from orb.cross_language import unpack_value
        return unpack_value(view)
    magic, version, flags, count, length = _HEAD.unpack_from(view, 0)
    if version != VERSION:
        raise ValueError("orb Python value version %d is not known here (this orb reads %d)" % (version, VERSION))
    at = _HEAD.size
    buffers = []
    for _ in range(count):
        start, size = _SPAN.unpack_from(view, at)
        at += _SPAN.size
        buffers.append(view[start:start + size])
    value = pickle.loads(view[at:at + length], buffers=buffers)
    if flags & FLAG_ERROR:
        from orb.exceptions import task_error
        raise task_error(*value)
    return value


def rebuild_ref(object_id, owner):
    """An ObjectRef read out of a value: this process now borrows the object."""
    return _core._rebuild_ref(object_id, owner)

"""How orb lays out a Python value in the object store.

A value is pickled with protocol 5; buffers that support it (numpy arrays, torch
tensors through numpy, bytearrays, PickleBuffer) go out of band, so that they are
copied once, into the value's final place, and come back as views over that memory:

    magic "ORBP" | version (1 byte) | 3 bytes zero | buffer count (u32)
    | pickle length (u64) | per buffer: offset (u64), length (u64)
    | the pickle stream | each buffer at a 64-byte aligned offset

Reading gives read-only views: an array that came from the store is not writeable
(as in Ray), and it keeps the object pinned in the store while it lives.
"""
import pickle
import struct

MAGIC = b"ORBP"
VERSION = 1
_HEAD = struct.Struct("<4sB3xIQ")
_SPAN = struct.Struct("<QQ")
ALIGN = 64


def _aligned(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


class Serialized:
    """A value ready to be written: its size, and `write(memoryview)` to put it there."""

    def __init__(self, value):
        self._buffers = []
        self._stream = pickle.dumps(value, protocol=5, buffer_callback=self._buffers.append)
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
        _HEAD.pack_into(view, 0, MAGIC, VERSION, len(self._raws), len(self._stream))
        at = _HEAD.size
        for start, length in self._spans:
            _SPAN.pack_into(view, at, start, length)
            at += _SPAN.size
        view[at:at + len(self._stream)] = self._stream
        for (start, length), raw in zip(self._spans, self._raws):
            view[start:start + length] = raw.cast("B")
        for b in self._buffers:
            b.release()


def deserialize(buffer):
    """The value held by `buffer` (anything with the buffer protocol), read in place."""
    view = memoryview(buffer).cast("B")
    if view.nbytes < _HEAD.size:
        raise ValueError("not an orb Python value: %d bytes" % view.nbytes)
    magic, version, count, length = _HEAD.unpack_from(view, 0)
    if magic != MAGIC:
        raise TypeError("this object was not made by Python (it may be a C++ value); "
                        "it cannot be read as a Python value yet")
    if version != VERSION:
        raise ValueError("orb Python value version %d is not known here (this orb reads %d)" % (version, VERSION))
    at = _HEAD.size
    buffers = []
    for _ in range(count):
        start, size = _SPAN.unpack_from(view, at)
        at += _SPAN.size
        buffers.append(view[start:start + size])
    return pickle.loads(view[at:at + length], buffers=buffers)

"""The modelled NPU device: HBM as one preallocated byte arena, engines, a stream budget.

Device memory is a numpy uint8 buffer of `hbm_bytes`. `alloc(nbytes, align)` returns an offset into it
(first fit over a free list of [offset, size) holes kept sorted by offset, merged on free); `view(offset,
dtype, count)` cuts a numpy view, so tensors live inside the arena and kernels write into it.

Public checks, private hooks (tinygrad's habit): `alloc`/`free` validate and add context (a
DeviceMemoryError names requested, capacity and bytes in use); `_alloc`/`_free` implement the free list
and are what another allocator would replace.

Streams: `create_stream(priority)` makes up to `max_streams` live streams; with `task_slots` set, they share
a Gate so at most that many tasks run at once (one thread budget, picked by priority). `synchronize()`
waits for every stream, `close()` stops them all.
"""
from __future__ import annotations

import bisect
import threading

import numpy as np

from ..errors import DeviceMemoryError, GEError
from ..kernels.registry import AICORE, AICPU, DVPP, HCCL
from .stream import Gate, Stream

DEFAULT_ALIGN = 512


def align_up(n: int, align: int) -> int:
    return (n + align - 1) // align * align


class Device:
    """A modelled NPU: `hbm_bytes` of device memory, a set of engines, at most `max_streams` streams."""

    def __init__(self, hbm_bytes: int, engines=(AICORE, AICPU, DVPP, HCCL), max_streams: int = 8,
                 name: str = "npu0", task_slots: int | None = None):
        if hbm_bytes <= 0:
            raise GEError(f"device memory must be positive, got {hbm_bytes} bytes")
        if max_streams < 1:
            raise GEError(f"max_streams must be >= 1, got {max_streams}")
        self.name, self.engines, self.max_streams = name, tuple(engines), max_streams
        self.hbm = np.zeros(hbm_bytes, np.uint8)
        self._holes: list[list[int]] = [[0, hbm_bytes]]   # [offset, size], sorted by offset
        self._live: dict[int, int] = {}                    # offset -> reserved bytes
        self._lock = threading.Lock()
        self.peak_bytes = 0
        self.gate = Gate(task_slots) if task_slots else None
        self.streams: list[Stream] = []
        self._stream_ids = 0

    @property
    def capacity(self) -> int:
        return self.hbm.nbytes

    @property
    def in_use(self) -> int:
        return sum(self._live.values())

    # -- public checks -------------------------------------------------------------------------
    def alloc(self, nbytes: int, align: int = DEFAULT_ALIGN, what: str = "") -> int:
        """Reserve `nbytes` (rounded up to `align`) and return the offset; DeviceMemoryError if none fits."""
        if nbytes < 0 or align <= 0 or align & (align - 1):
            raise GEError(f"bad allocation request: {nbytes} bytes, alignment {align} (a power of two)")
        size = align_up(max(nbytes, 1), align)
        with self._lock:
            offset = self._alloc(size, align)
            if offset is None:
                raise DeviceMemoryError(nbytes, self.capacity, self.in_use, what)
            self._live[offset] = size
            self.peak_bytes = max(self.peak_bytes, self.in_use)
        return offset

    def free(self, offset: int) -> None:
        with self._lock:
            size = self._live.pop(offset, None)
            if size is None:
                raise GEError(f"free of offset {offset}: not an allocation of device '{self.name}'")
            self._free(offset, size)

    def view(self, offset: int, dtype, count: int) -> np.ndarray:
        """A 1-D numpy view of `count` elements of `dtype` at `offset` in device memory."""
        dtype = np.dtype(dtype)
        end = offset + count * dtype.itemsize
        if offset < 0 or end > self.capacity:
            raise GEError(f"view [{offset}, {end}) is outside device memory of {self.capacity} bytes")
        if offset % dtype.itemsize:
            raise GEError(f"view at offset {offset} is not aligned for {dtype}")
        return self.hbm[offset:end].view(dtype)

    def reset(self) -> None:
        """Free everything (the arena keeps its bytes)."""
        with self._lock:
            self._live.clear()
            self._holes = [[0, self.capacity]]

    # -- streams ------------------------------------------------------------------------------------
    def create_stream(self, priority: int = 0, tracer=None) -> Stream:
        self.streams = [s for s in self.streams if s.alive]
        if len(self.streams) >= self.max_streams:
            raise GEError(f"device '{self.name}' allows {self.max_streams} streams: all are in use")
        stream = Stream(self._stream_ids, priority, tracer=tracer, gate=self.gate)
        self._stream_ids += 1
        self.streams.append(stream)
        return stream

    def synchronize(self, timeout: float | None = None) -> None:
        for s in self.streams:
            s.synchronize(timeout)

    def close(self) -> None:
        for s in self.streams:
            s.close()
        self.streams = []

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- private hooks: first fit over a sorted free list -----------------------------------------
    def _alloc(self, size: int, align: int) -> int | None:
        for k, (off, hole) in enumerate(self._holes):
            start = align_up(off, align)
            pad = start - off
            if hole - pad < size:
                continue
            rest = hole - pad - size
            pieces = ([[off, pad]] if pad else []) + ([[start + size, rest]] if rest else [])
            self._holes[k:k + 1] = pieces
            return start
        return None

    def _free(self, offset: int, size: int) -> None:
        k = bisect.bisect_left(self._holes, [offset, 0])
        self._holes.insert(k, [offset, size])
        if k + 1 < len(self._holes) and offset + size == self._holes[k + 1][0]:   # merge right
            self._holes[k][1] += self._holes.pop(k + 1)[1]
        if k > 0 and self._holes[k - 1][0] + self._holes[k - 1][1] == offset:      # merge left
            self._holes[k - 1][1] += self._holes.pop(k)[1]

    def __repr__(self) -> str:
        return (f"Device({self.name}: {self.capacity} bytes, {self.in_use} in use, engines "
                f"{'/'.join(self.engines)}, max_streams {self.max_streams})")

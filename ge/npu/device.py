"""The modelled NPU device: device memory, AI cores, engines, a stream budget.

Device memory is a `DeviceMemory` (memory.py: lazily backed segments that grow with need, extents first
fit) with an ALIGN granule; `alloc(nbytes, align)` returns an offset into it and `view(offset, dtype, count)` cuts a
numpy view, so tensors live inside the device's memory and kernels write into it. `alloc`/`free` validate
and add context (a DeviceMemoryError names requested, capacity and bytes in use).

AI cores: `aicores` is the device's team (aicore.py), shared by both runtimes. Streams:
`create_stream(priority)` makes up to `max_streams` live streams; with `task_slots` set, they share a Gate
so at most that many tasks run at once (one thread budget, picked by priority). `synchronize()` waits for
every stream, `close()` stops them all.
"""
from __future__ import annotations

import threading

import numpy as np

from ..errors import GEError
from .aicore import AICores, team
from .engines import AICORE, AICPU, DVPP, HCCL
from .memory import ALIGN, DeviceMemory
from .stream import Gate, Stream


class Device:
    """A modelled NPU: `hbm_bytes` of device memory, a set of engines, at most `max_streams` streams."""

    def __init__(self, hbm_bytes: int, engines=(AICORE, AICPU, DVPP, HCCL), max_streams: int = 8,
                 name: str = "npu0", task_slots: int | None = None):
        if max_streams < 1:
            raise GEError(f"max_streams must be >= 1, got {max_streams}")
        self.name, self.engines, self.max_streams = name, tuple(engines), max_streams
        self.memory = DeviceMemory(hbm_bytes, ALIGN)
        self._live: dict[int, int] = {}                    # offset -> requested bytes
        self._lock = threading.Lock()
        self.gate = Gate(task_slots) if task_slots else None
        self.streams: list[Stream] = []
        self._stream_ids = 0

    @property
    def aicores(self) -> AICores:
        return team()

    @property
    def capacity(self) -> int:
        return self.memory.capacity

    @property
    def in_use(self) -> int:
        return self.memory.in_use

    @property
    def peak_bytes(self) -> int:
        return self.memory.peak

    # -- public checks -------------------------------------------------------------------------
    def alloc(self, nbytes: int, align: int = ALIGN, what: str = "") -> int:
        """Reserve `nbytes` (rounded up to ALIGN) starting on `align`; the offset, or DeviceMemoryError."""
        if nbytes < 0 or align <= 0 or align & (align - 1):
            raise GEError(f"bad allocation request: {nbytes} bytes, alignment {align} (a power of two)")
        offset = self.memory.reserve(max(nbytes, 1), what, align)
        with self._lock:
            self._live[offset] = max(nbytes, 1)
        return offset

    def free(self, offset: int) -> None:
        with self._lock:
            size = self._live.pop(offset, None)
        if size is None:
            raise GEError(f"free of offset {offset}: not an allocation of device '{self.name}'")
        self.memory.release(offset, size)

    def view(self, offset: int, dtype, count: int) -> np.ndarray:
        """A 1-D numpy view of `count` elements of `dtype` at `offset` in device memory."""
        dtype = np.dtype(dtype)
        if offset % dtype.itemsize:
            raise GEError(f"view at offset {offset} is not aligned for {dtype}")
        return self.memory.view(offset, count * dtype.itemsize).view(dtype)

    def reset(self) -> None:
        """Free everything (the memory keeps its bytes)."""
        with self._lock:
            live, self._live = self._live, {}
        for off, size in live.items():
            self.memory.release(off, size)

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

    def __repr__(self) -> str:
        return (f"Device({self.name}: {self.capacity} bytes, {self.in_use} in use, engines "
                f"{'/'.join(self.engines)}, max_streams {self.max_streams})")


def memory_of(device, capacity: int, need: int | None = None) -> DeviceMemory:
    """The memory a runtime reserves in: a Device's, a DeviceMemory given as is, or (None) a new one of
    `capacity` bytes with an ALIGN granule (one per executor: its own share of the modelled device), whose
    first addresses are the `need` the runtime computed from its plan (it grows past them when asked)."""
    if device is None:
        return DeviceMemory(capacity, ALIGN, need)
    return device.memory if isinstance(device, Device) else device

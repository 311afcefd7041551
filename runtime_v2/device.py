"""L1 of runtime_v2's unified allocator: the modelled device's memory as one address range.

`DeviceMemory(capacity)` is the device's address range `[0, capacity)` as one private anonymous mapping:
GE reserves virtual addresses and maps physical pages lazily; here pages are backed when first touched
and handed back to the OS when their extent is released (`madvise(MADV_DONTNEED)`). Extents are taken
first-fit from a list of holes kept sorted by offset (merged on release), 64 KiB aligned, against the
capacity; `try_reserve_at` grows an extent in place when the bytes after it are free. Thread-safe: one
device serves every executor instance and stream. `_decommit` is the hook a modelled NPU can replace.
"""
from __future__ import annotations

import bisect
import mmap
import threading

import numpy as np

from ge.errors import DeviceMemoryError, GEError

PAGE_BYTES = 1 << 16          # GE: PAGE_SIZE_IDEM_DEFAULT = 16
DEFAULT_CAPACITY = 4 << 30


class DeviceMemory:
    """L1: `capacity` bytes of modelled device memory; extents by offset; thread-safe; in use and peak."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, align: int = PAGE_BYTES):
        if capacity <= 0:
            raise GEError(f"device memory must be positive, got {capacity} bytes")
        self.capacity, self.align = int(capacity), align
        self._map = mmap.mmap(-1, -(-self.capacity // align) * align, flags=mmap.MAP_PRIVATE)
        self.buffer = np.frombuffer(self._map, np.uint8)
        self._holes: list[list[int]] = [[0, self.capacity]]  # [offset, size], sorted by offset
        self.in_use = 0
        self.peak = 0
        self._lock = threading.Lock()

    def size_of(self, nbytes: int) -> int:
        return max(self.align, -(-int(nbytes) // self.align) * self.align)

    def reserve(self, nbytes: int, what: str = "") -> int:
        """The offset of a new extent of `nbytes` (rounded up); DeviceMemoryError when none fits."""
        off = self.try_reserve(nbytes)
        if off is None:
            raise DeviceMemoryError(nbytes, self.capacity, self.in_use, what)
        return off

    def try_reserve(self, nbytes: int) -> int | None:
        size = self.size_of(nbytes)
        with self._lock:
            for hole in self._holes:
                if hole[1] >= size:
                    off = hole[0]
                    self._take(hole, size)
                    return off
        return None

    def try_reserve_at(self, offset: int, nbytes: int) -> bool:
        """Reserve exactly [offset, offset + nbytes) if it is free (to grow an extent in place)."""
        size = self.size_of(nbytes)
        with self._lock:
            k = bisect.bisect_left(self._holes, [offset, -1])
            if k < len(self._holes) and self._holes[k][0] == offset and self._holes[k][1] >= size:
                self._take(self._holes[k], size)
                return True
        return False

    def release(self, offset: int, nbytes: int) -> None:
        size = self.size_of(nbytes)
        with self._lock:
            holes = self._holes
            k = bisect.bisect_left(holes, [offset, -1])
            after = k < len(holes) and offset + size > holes[k][0]
            before = k > 0 and holes[k - 1][0] + holes[k - 1][1] > offset
            if after or before or offset < 0 or offset + size > len(self.buffer):
                raise GEError(f"device release of [{offset}, {offset + size}) is not a reserved extent")
            self._decommit(offset, size)  # before the hole is visible: nobody else owns these pages yet
            self.in_use -= size
            holes.insert(k, [offset, size])
            if k + 1 < len(holes) and offset + size == holes[k + 1][0]:
                holes[k][1] += holes.pop(k + 1)[1]
            if k and holes[k - 1][0] + holes[k - 1][1] == offset:
                holes[k - 1][1] += holes.pop(k)[1]

    def view(self, offset: int, nbytes: int) -> np.ndarray:
        return self.buffer[offset:offset + nbytes]

    def _take(self, hole: list, size: int) -> None:
        """Under the lock: cut `size` bytes off the front of `hole`."""
        hole[0] += size
        hole[1] -= size
        if not hole[1]:
            self._holes.remove(hole)
        self.in_use += size
        self.peak = max(self.peak, self.in_use)

    # -- private hook ---------------------------------------------------------------------------------
    def _decommit(self, offset: int, size: int) -> None:
        """Give the physical pages of a released extent back (the addresses stay reserved)."""
        self._map.madvise(mmap.MADV_DONTNEED, offset, size)

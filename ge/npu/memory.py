"""The modelled device's memory: one address range of extents, and the alignments every layer shares.

`DeviceMemory(capacity, granule, reserve)` is the device's address range `[0, min(capacity, reserve))` as one
private anonymous mapping: GE reserves virtual addresses and maps physical pages lazily; here pages are backed
when first touched (reading as zeros) and handed back to the OS when their extent is released
(`madvise(MADV_DONTNEED)`). A runtime reserves what its plan needs (`reserve`), not the whole capacity: the
addresses count against a process's address-space limit (`ulimit -v`), 4 GiB a session made the second session
fail under 8 GiB. `close()` unmaps the range (once no array views it; else the last view's collection does:
a run in flight on another thread reads on undisturbed). Extents are multiples of `granule` (64 KiB for runtime_v2's caching allocator,
ALIGN for a `Device`'s tensors), taken first-fit from a list of holes kept sorted by offset (merged on
release), aligned as asked, against the capacity; `try_reserve_at` grows an extent in place when the bytes
after it are free. Thread-safe: one memory serves every executor instance and stream of a session.
Public checks, private hooks (tinygrad's habit): `reserve` raises a DeviceMemoryError naming what was asked,
the capacity and the bytes in use; `_decommit` is the hook another device would replace.
"""
from __future__ import annotations

import bisect
import gc
import mmap
import sys
import threading

import numpy as np

from ..errors import DeviceMemoryError, GEError

# addresses only: pages are counted when touched, so a large device does not use up the host's commit limit
# (which would make fork() fail while many executors are loaded); Python 3.11's mmap lacks the name
_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)
ALIGN = 512                   # GE's MEM_ALIGN_SIZE: tensors, workspaces and segments start on it
IO_ALIGN = 32                 # a user's buffer bound zero-copy must be aligned to this
PAGE_BYTES = 1 << 16          # GE: PAGE_SIZE_IDEM_DEFAULT = 16
DEFAULT_CAPACITY = 4 << 30


def align_up(n: int, align: int = ALIGN) -> int:
    return -(-int(n) // align) * align


class DeviceMemory:
    """`capacity` bytes of modelled device memory; extents by offset; thread-safe; in use and peak."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, align: int = PAGE_BYTES, reserve: int | None = None):
        if capacity <= 0:
            raise GEError(f"device memory must be positive, got {capacity} bytes")
        if align <= 0 or align & (align - 1):
            raise GEError(f"device memory granule must be a power of two, got {align}")
        self.capacity, self.align = int(capacity), align
        # the addresses mapped: the capacity, or what the runtime said its plan needs (never above it)
        self.mapped = -(-min(self.capacity, max(int(reserve), 1) if reserve is not None else self.capacity)
                        // align) * align
        self._map = mmap.mmap(-1, self.mapped, flags=mmap.MAP_PRIVATE | _NORESERVE)
        self.buffer = np.frombuffer(self._map, np.uint8)
        self._holes: list[list[int]] = [[0, min(self.capacity, self.mapped)]]  # [offset, size], by offset
        self.in_use = 0
        self.peak = 0
        self._lock = threading.Lock()

    def size_of(self, nbytes: int) -> int:
        return max(self.align, -(-int(nbytes) // self.align) * self.align)

    def reserve(self, nbytes: int, what: str = "", align: int | None = None) -> int:
        """The offset of a new extent of `nbytes` (rounded up to the granule, starting on `align`, default
        the granule); DeviceMemoryError when none fits."""
        off = self.try_reserve(nbytes, align)
        if off is None:
            if self.mapped < self.capacity and self.in_use + self.size_of(nbytes) <= self.capacity:
                what = (f"{what or 'a request'} (beyond the {self.mapped} bytes of addresses this session reserved "
                        "for its plan)")
            raise DeviceMemoryError(nbytes, self.capacity, self.in_use, what)
        return off

    def try_reserve(self, nbytes: int, align: int | None = None) -> int | None:
        size, align = self.size_of(nbytes), max(align or self.align, self.align)
        if align & (align - 1):
            raise GEError(f"bad allocation request: {nbytes} bytes, alignment {align} (a power of two)")
        with self._lock:
            for k, (off, room) in enumerate(self._holes):
                start = align_up(off, align)
                if room - (start - off) < size:
                    continue
                if start > off:   # the padding stays a hole of its own
                    self._holes.insert(k, [off, start - off])
                    k += 1
                    self._holes[k] = [start, room - (start - off)]
                self._take(self._holes[k], size)
                return start
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
            if self._map is None:   # closed: the whole range went back at once
                return
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
        if self.buffer is None:
            raise GEError("the device memory is closed")
        return self.buffer[offset:offset + nbytes]

    def close(self) -> None:
        """Give the address range back (munmap): at once when no array views it any more, else when the last
        view is collected (a run still in flight on another thread keeps reading its weights and arena, so
        nothing is dropped under it). Reserving after close() fails."""
        with self._lock:
            m, self._map, self.buffer, self._holes = self._map, None, None, []
        if m is None:
            return
        for attempt in range(2):
            try:
                m.close()
                return
            except BufferError:   # views left: the executor's instances may be in a reference cycle
                if attempt == 0:
                    gc.collect()

    def _take(self, hole: list, size: int) -> None:
        """Under the lock: cut `size` bytes off the front of `hole`."""
        hole[0] += size
        hole[1] -= size
        if not hole[1]:
            self._holes.remove(hole)
        self.in_use += size
        self.peak = max(self.peak, self.in_use)

    # -- private hook ---------------------------------------------------------------------------------
    def prefer_huge_pages(self, offset: int, size: int) -> None:
        """Ask for 2 MiB pages behind an extent read whole every run (the weights), before it is first touched:
        the kernel's transparent huge pages in `madvise` mode back only what asks, as numpy's own large arrays
        do; streaming GPT-2's weights from 4 KiB pages cost runtime_v1 ~20-40% more CPU time per decode step
        than runtime_v2 reading numpy's (one thread, load 13). A no-op where the OS has no such advice."""
        advice = getattr(mmap, "MADV_HUGEPAGE", None)
        lo, hi = align_up(offset, mmap.PAGESIZE), (offset + size) // mmap.PAGESIZE * mmap.PAGESIZE
        if advice is not None and hi > lo:
            try:
                self._map.madvise(advice, lo, hi - lo)
            except OSError:   # THP off or unsupported: 4 KiB pages, as before
                pass

    def _decommit(self, offset: int, size: int) -> None:
        """Give the physical pages of a released extent back (the addresses stay reserved)."""
        lo, hi = align_up(offset, mmap.PAGESIZE), (offset + size) // mmap.PAGESIZE * mmap.PAGESIZE
        if hi > lo:   # whole OS pages only: a small granule's neighbours may share the edge pages
            self._map.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

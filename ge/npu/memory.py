"""The modelled device's memory: extents of one address space, host pages that grow with need, alignments.

`DeviceMemory(capacity, granule, reserve)` hands out extents of device addresses (offsets), first fit from a
list of holes kept sorted by offset (merged on release), aligned as asked. The cap is the capacity: bytes in
use never exceed it (DeviceMemoryError naming what was asked, the capacity and the bytes in use).
Host pages back the addresses (pages.py) as GE reserves virtual addresses and maps physical pages lazily;
addresses count against a process's address-space limit (`ulimit -v`), so a memory maps what it is asked
for, not its capacity (4 GiB a session made the second session fail under 8 GiB, issue 46):
  1. It starts with `reserve` bytes (what the runtime computed from its plan; default RESERVE) as segment 0
     at offset 0.
  2. A request no hole fits (and the cap allows) grows the memory: the last segment grows in place (the pages
     after it, mapped exactly there or not at all) by the larger of what the request needs and half the
     mapped bytes (so a growing session maps O(log) times), capped by the capacity; when the pages after it are
     taken, a new segment is mapped anywhere and given the offsets after a gap of one GAP, so no extent, and no
     span a caching allocator merges from adjacent extents, ever straddles two host ranges.
  3. Nothing handed out moves: an offset's host address is its segment's address plus its place in it, and
     a view cut from a segment keeps that segment's pages mapped (pages.Range).
  4. Released extents give their physical pages back (`_decommit`, MADV_DONTNEED); `close()` unmaps every
     segment (at once when no array views it, else when the last view is collected: a run in flight on
     another thread reads on undisturbed). Reserving after close() fails.
Thread-safe: one memory serves every executor instance and stream of a session. Lookups (`view`, `address`)
read one immutable table of segments, replaced whole when the memory grows. Public checks, private hooks
(tinygrad's habit): `reserve` validates and names; `_decommit` is what another device would replace.
"""
from __future__ import annotations

import bisect
import gc
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from ..errors import DeviceMemoryError, GEError
from . import pages as host

ALIGN = 512                   # GE's MEM_ALIGN_SIZE: tensors, workspaces and segments start on it
IO_ALIGN = 32                 # a user's buffer bound zero-copy must be aligned to this
PAGE_BYTES = 1 << 16          # GE: PAGE_SIZE_IDEM_DEFAULT = 16
DEFAULT_CAPACITY = 4 << 30
RESERVE = 64 << 20            # the addresses a memory maps first when nobody says what it needs
GAP = 1 << 21                 # offsets left unused between segments that are not contiguous on the host


def align_up(n: int, align: int = ALIGN) -> int:
    return -(-int(n) // align) * align


@dataclass(frozen=True, slots=True)
class Segment:
    """Offsets [start, end) of the device, backed by one contiguous host range."""
    start: int
    end: int
    range: host.Range
    array: np.ndarray

    @property
    def address(self) -> int:
        return self.range.address


class DeviceMemory:
    """`capacity` bytes of modelled device memory; extents by offset; thread-safe; in use and peak."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, align: int = PAGE_BYTES, reserve: int | None = None):
        if capacity <= 0:
            raise GEError(f"device memory must be positive, got {capacity} bytes")
        if align <= 0 or align & (align - 1):
            raise GEError(f"device memory granule must be a power of two, got {align}")
        self.capacity, self.align = int(capacity), align
        self._step = max(align, host.PAGE)   # segments start and grow on it
        first = align_up(min(self.capacity, max(int(reserve), 1) if reserve is not None else RESERVE), self._step)
        pages = host.map_pages(first)
        if pages is None:
            raise DeviceMemoryError(first, self.capacity, 0, f"the device's first {first} bytes of addresses "
                                    f"(the host refused: {host.errno_text()})")
        rng = host.Range([pages])
        self._table: tuple = ((0,), (Segment(0, first, rng, rng.array()),))   # (starts, segments)
        self._holes: list[list[int]] = [[0, first]]  # [offset, size], by offset; each inside one segment
        self.in_use = 0
        self.peak = 0
        self.grown = 0            # times the memory mapped more addresses (step 2)
        self._refused = ""        # why the host last refused to map more ("" when it did not)
        self._lock = threading.Lock()

    # -- what is mapped ---------------------------------------------------------------------------------
    @property
    def mapped(self) -> int:
        """Bytes of host addresses mapped now."""
        return sum(s.end - s.start for s in self._table[1])

    @property
    def segments(self) -> tuple:
        return self._table[1]

    def _segment(self, offset: int, nbytes: int = 0) -> Segment:
        starts, segs = self._table
        k = bisect.bisect_right(starts, offset) - 1
        if k < 0 or offset + nbytes > segs[k].end:
            if not segs:
                raise GEError("the device memory is closed")
            raise GEError(f"device bytes [{offset}, {offset + nbytes}) are not inside one mapped segment")
        return segs[k]

    def view(self, offset: int, nbytes: int) -> np.ndarray:
        """A uint8 view of device bytes [offset, offset + nbytes) (inside one extent)."""
        seg = self._segment(offset, nbytes)
        return seg.array[offset - seg.start:offset - seg.start + nbytes]

    def address(self, offset: int) -> int:
        """The host address of a device offset (never changes while the memory is open)."""
        seg = self._segment(offset)
        return seg.address + offset - seg.start

    def regions(self) -> list[tuple[int, int]]:
        """(start, end) host addresses of every segment."""
        return [(s.address, s.address + s.end - s.start) for s in self._table[1]]

    def owns(self, a: np.ndarray) -> bool:
        """Whether array `a` lies inside this memory's mapped pages."""
        at = a.__array_interface__["data"][0]
        return any(s <= at and at + a.nbytes <= e for s, e in self.regions())

    def size_of(self, nbytes: int) -> int:
        return max(self.align, -(-int(nbytes) // self.align) * self.align)

    # -- public checks ------------------------------------------------------------------------------------
    def reserve(self, nbytes: int, what: str = "", align: int | None = None) -> int:
        """The offset of a new extent of `nbytes` (rounded up to the granule, starting on `align`, default
        the granule); DeviceMemoryError when the capacity or the host's address space refuses it."""
        off = self.try_reserve(nbytes, align)
        if off is None:
            raise self.error(nbytes, what)
        return off

    def error(self, nbytes: int, what: str = "") -> DeviceMemoryError:
        """The refusal of a request of `nbytes` for `what`: over the capacity, or the host's address space
        (a `ulimit -v`) refused the pages it needed."""
        if self._refused and self.in_use + self.size_of(nbytes) <= self.capacity:
            what = f"{what or 'a request'} ({self._refused})"
        return DeviceMemoryError(nbytes, self.capacity, self.in_use, what)

    def try_reserve(self, nbytes: int, align: int | None = None) -> int | None:
        """Like reserve, None when it is refused (`error` says why)."""
        size, align = self.size_of(nbytes), max(align or self.align, self.align)
        if align & (align - 1):
            raise GEError(f"bad allocation request: {nbytes} bytes, alignment {align} (a power of two)")
        with self._lock:
            if not self._table[1] or self.in_use + size > self.capacity:
                return None
            off = self._first_fit(size, align)
            if off is None and self._grow(size, align):
                off = self._first_fit(size, align)
            return off

    def try_reserve_at(self, offset: int, nbytes: int) -> bool:
        """Reserve exactly [offset, offset + nbytes) if it is free (to grow an extent in place): a hole there,
        or the end of the last segment, which then grows in place."""
        size = self.size_of(nbytes)
        with self._lock:
            if not self._table[1] or self.in_use + size > self.capacity:
                return False
            k = bisect.bisect_left(self._holes, [offset, -1])
            room = self._holes[k][1] if k < len(self._holes) and self._holes[k][0] == offset else 0
            if room < size:   # only the last segment's end grows, in place
                last = self._table[1][-1]
                if offset + room != last.end or not self._grow_in_place(last, self._growth(size - room)):
                    return False
                k = bisect.bisect_left(self._holes, [offset, -1])
            self._take(k, size)
            return True

    def release(self, offset: int, nbytes: int) -> None:
        size = self.size_of(nbytes)
        with self._lock:
            if not self._table[1]:   # closed: the whole range went back at once
                return
            holes = self._holes
            k = bisect.bisect_left(holes, [offset, -1])
            after = k < len(holes) and offset + size > holes[k][0]
            before = k > 0 and holes[k - 1][0] + holes[k - 1][1] > offset
            starts, segs = self._table
            s = bisect.bisect_right(starts, offset) - 1
            if after or before or offset < 0 or s < 0 or offset + size > segs[s].end:
                raise GEError(f"device release of [{offset}, {offset + size}) is not a reserved extent")
            self._decommit(segs[s].address + offset - segs[s].start, size)  # before the hole is visible
            self.in_use -= size
            self._free(k, offset, size)

    def close(self) -> None:
        """Give every segment's addresses back (munmap): at once when no array views them, else when the last
        view is collected. Reserving after close() fails."""
        with self._lock:
            segs, self._table, self._holes = self._table[1], ((), ()), []
        alive = [weakref.ref(p) for s in segs for p in s.range.pages]
        del segs
        if any(r() is not None for r in alive):   # views left: the executor's instances may be in a cycle
            gc.collect()

    # -- under the lock ---------------------------------------------------------------------------------
    def _first_fit(self, size: int, align: int) -> int | None:
        for k, (off, room) in enumerate(self._holes):
            start = align_up(off, align)
            if room - (start - off) < size:
                continue
            if start > off:   # the padding stays a hole of its own
                self._holes.insert(k, [off, start - off])
                k += 1
                self._holes[k] = [start, room - (start - off)]
            self._take(k, size)
            return start
        return None

    def _take(self, k: int, size: int) -> None:
        """Cut `size` bytes off the front of hole k."""
        hole = self._holes[k]
        hole[0] += size
        hole[1] -= size
        if not hole[1]:
            del self._holes[k]
        self.in_use += size
        self.peak = max(self.peak, self.in_use)

    def _free(self, k: int, offset: int, size: int) -> None:
        """A hole [offset, offset + size) at index k, merged with neighbours in the same segment (segments
        are GAP apart, so offsets that touch are contiguous on the host)."""
        holes = self._holes
        holes.insert(k, [offset, size])
        if k + 1 < len(holes) and offset + size == holes[k + 1][0]:
            holes[k][1] += holes.pop(k + 1)[1]
        if k and holes[k - 1][0] + holes[k - 1][1] == offset:
            holes[k - 1][1] += holes.pop(k)[1]

    def _growth(self, need: int) -> int:
        """Bytes to map for a request needing `need` more: at least that, else half what is mapped (to the cap)."""
        mapped = self.mapped
        return align_up(max(need, min(mapped // 2, self.capacity - mapped)), self._step)

    def _grow(self, size: int, align: int) -> bool:
        """Step 2: map enough for an aligned extent of `size`; False when the host refuses (noted)."""
        last = self._table[1][-1]
        tail = self._holes[-1] if self._holes and sum(self._holes[-1]) == last.end else [last.end, 0]
        need = align_up(tail[0], align) + size - last.end
        for grow in (self._growth(need), align_up(need, self._step)):   # the exact need if the host balks
            if self._grow_in_place(last, grow) or self._new_segment(size + align, grow):
                self._refused = ""
                return True
        self._refused = (f"the host refused {align_up(need, self._step)} more bytes of addresses beyond the "
                         f"{self.mapped} this device maps: {host.errno_text()}")
        return False

    def _grow_in_place(self, last: Segment, grow: int) -> bool:
        more = host.map_pages(grow, at=last.address + last.end - last.start)
        if more is None:
            return False
        rng = last.range.grown(more)
        self._replace(Segment(last.start, last.end + grow, rng, rng.array()))
        self._free(len(self._holes), last.end, grow)
        self.grown += 1
        return True

    def _new_segment(self, least: int, grow: int) -> bool:
        grow = max(grow, align_up(least, self._step))
        pages = host.map_pages(grow)
        if pages is None:
            return False
        starts, segs = self._table
        start = align_up(segs[-1].end + GAP, max(GAP, self._step))
        rng = host.Range([pages])
        self._table = (starts + (start,), segs + (Segment(start, start + pages.nbytes, rng, rng.array()),))
        self._holes.append([start, pages.nbytes])
        self.grown += 1
        return True

    def _replace(self, seg: Segment) -> None:
        starts, segs = self._table
        k = starts.index(seg.start)
        self._table = (starts, segs[:k] + (seg,) + segs[k + 1:])

    # -- private hook ---------------------------------------------------------------------------------
    def prefer_huge_pages(self, offset: int, size: int) -> None:
        """Ask for 2 MiB pages behind an extent read whole every run (the weights), before it is first touched:
        the kernel's transparent huge pages in `madvise` mode back only what asks, as numpy's own large arrays
        do; streaming GPT-2's weights from 4 KiB pages cost runtime_v1 ~20-40% more CPU time per decode step
        than runtime_v2 reading numpy's (one thread, load 13). A no-op where the OS has no such advice."""
        host.advise_huge(self.address(offset), size)

    def _decommit(self, address: int, size: int) -> None:
        """Give the physical pages of a released extent back (the addresses stay mapped)."""
        host.decommit(address, size)

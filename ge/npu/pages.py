"""Host pages behind the modelled device's memory: anonymous mappings that can grow in place.

Python's `mmap` cannot place a mapping, so a range could not grow without moving (and a device address, once
handed out as a view, must never move). Here libc's mmap does it:
  1. `map_pages(nbytes, at)` maps `nbytes` of private, lazily backed (MAP_NORESERVE) pages; with `at`, exactly
     there or not at all (MAP_FIXED_NOREPLACE: it fails cleanly when any page there is taken, and a kernel
     before 4.17, which reads the flag as a hint, is checked by the address it returned).
  2. A first mapping is hinted into a random 1 GiB slot of a sparse part of the address space (mimalloc's
     habit), not where the kernel would put it (top-down, just below the last mapping, so the pages after it
     are usually taken): the range after it is then almost always free to grow into.
  3. Each mapping is a `Pages` object whose collection unmaps it; `Range` is an array interface over one
     contiguous run of them (a segment) that keeps them alive, so a numpy view of any part of a segment keeps
     its pages mapped: close() gives a range back at once when nothing views it, else when the last view goes.
`decommit(address, nbytes)` hands physical pages back (MADV_DONTNEED): the addresses stay mapped.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import random
import sys
import weakref

import numpy as np

PAGE = mmap.PAGESIZE
_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)
_NOREPLACE = 0x100000 if sys.platform.startswith("linux") else 0   # MAP_FIXED_NOREPLACE (Linux 4.17)
_FLAGS = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _NORESERVE
_FAILED = ctypes.c_void_p(-1).value
_HINTS = (16 << 40, 80 << 40)       # [16 TiB, 80 TiB): below x86-64's heap/PIE and mmap areas, 47-bit safe
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_rng = random.Random()


def _mmap(at: int, nbytes: int, flags: int) -> int | None:
    addr = _libc.mmap(at or None, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0)
    return None if addr in (None, _FAILED) else addr


class Pages:
    """One anonymous mapping [address, address + nbytes); unmapped when collected."""
    __slots__ = ("address", "nbytes", "__weakref__")

    def __init__(self, address: int, nbytes: int):
        self.address, self.nbytes = address, nbytes
        weakref.finalize(self, _libc.munmap, address, nbytes).atexit = False  # the OS unmaps at exit


def map_pages(nbytes: int, at: int | None = None) -> Pages | None:
    """`nbytes` of fresh pages at `at` exactly (None when taken), or anywhere (hinted: step 2); None when the
    host refuses (ENOMEM: an address-space limit)."""
    nbytes = -(-int(nbytes) // PAGE) * PAGE
    if at is not None:
        addr = _mmap(at, nbytes, _FLAGS | _NOREPLACE)
        if addr is not None and addr != at:   # an old kernel took the flag as a hint
            _libc.munmap(addr, nbytes)
            addr = None
        return Pages(addr, nbytes) if addr is not None else None
    hint = _rng.randrange(_HINTS[0] >> 30, _HINTS[1] >> 30) << 30
    addr = _mmap(hint, nbytes, _FLAGS)    # a hint: the kernel goes elsewhere when the slot is taken
    return Pages(addr, nbytes) if addr is not None else None


def errno_text() -> str:
    e = ctypes.get_errno()
    return f"{os.strerror(e)} (errno {e})" if e else "refused"


def decommit(address: int, nbytes: int) -> None:
    """Give the physical pages of [address, address + nbytes) back; whole OS pages only."""
    lo, hi = -(-address // PAGE) * PAGE, (address + nbytes) // PAGE * PAGE
    if hi > lo:   # a small granule's neighbours may share the edge pages
        _libc.madvise(lo, hi - lo, mmap.MADV_DONTNEED)


def advise_huge(address: int, nbytes: int) -> None:
    """Ask for transparent huge pages behind [address, address + nbytes) (whole OS pages); a no-op where the
    OS has no such advice or THP is off."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    lo, hi = -(-address // PAGE) * PAGE, (address + nbytes) // PAGE * PAGE
    if advice is not None and hi > lo:
        _libc.madvise(lo, hi - lo, advice)   # its failure (EINVAL without THP) leaves 4 KiB pages, as before


class Range:
    """A contiguous run of mappings as one uint8 array interface (`np.asarray(range)`); holding it (as every
    view cut from that array does) keeps its pages mapped."""

    def __init__(self, pages: list[Pages]):
        self.pages = pages
        self.address, self.nbytes = pages[0].address, sum(p.nbytes for p in pages)
        self.__array_interface__ = {"data": (self.address, False), "shape": (self.nbytes,), "typestr": "|u1",
                                    "version": 3}

    def grown(self, more: Pages) -> "Range":
        return Range(self.pages + [more])

    def array(self) -> np.ndarray:
        return np.asarray(self)

"""Large host arrays get pages of their own, which go back to the OS when the array goes (issue 44's footprint).

glibc serves a large malloc from its heap once its dynamic mmap threshold has risen (it rises to the size of
every mmapped block freed, up to 32 MiB): a compile frees ~100 MiB of replaced weights, then the runtime's copy
of the weights lands on top of a heap that keeps those freed pages, and ResNet-50's peak RSS held the weights
two to three times. Fixing the threshold at 1 MiB (M_MMAP_THRESHOLD) makes every array of 1 MiB or more its
own mapping, unmapped at free. Linux with glibc only; elsewhere (or GE_HOST_MMAP_THRESHOLD=0) nothing changes.
"""
from __future__ import annotations

import ctypes
import os
import sys

M_MMAP_THRESHOLD = -3   # glibc's mallopt parameter number
THRESHOLD = 1 << 20


def fix_mmap_threshold() -> bool:
    """Whether the threshold was set (glibc found and GE_HOST_MMAP_THRESHOLD not 0)."""
    want = int(os.environ.get("GE_HOST_MMAP_THRESHOLD", THRESHOLD))
    if want <= 0 or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(M_MMAP_THRESHOLD, want))
    except (OSError, AttributeError):   # musl and others: no mallopt
        return False


FIXED = fix_mmap_threshold()

"""Size classes for the range assigners: GE's binary ranges (BinaryBlockMemAssigner::GetMemoryRanges).

A request is served by a block of the smallest class ceiling >= its size; a size above every ceiling is its
own class. Steps:
  1. Collect all request sizes, ascending. min = ALIGN (512) if the largest is above it, else the smallest size;
     K = ceil(log2(max / min)), at least 1; limit = count // K.
  2. Halve a ceiling K-1 times starting from max; at halving i (K-1 down to 1) move every remaining size above
     ceiling + ALIGN (the alignment slack; 0 when max <= ALIGN) into bucket i. What is left forms bucket 0.
  3. Until stable: drop empty buckets; merge a bucket with fewer than `limit` sizes into the next larger one,
     except the last bucket and "large" buckets (first size >= 8 MiB holding at least 2 sizes).
  4. Each bucket's ceiling is its largest size; the ceilings sorted ascending are the classes.
"""
from __future__ import annotations

import bisect
import math

from ..npu.memory import ALIGN

LARGE_BLOCK = 8 * 2 ** 20   # GE kLargeBlockSize
LARGE_RANGE_COUNT = 2       # GE kLargeBlockRangeSize


def binary_ranges(sizes) -> list[int]:
    sizes = sorted(s for s in sizes if s > 0)
    if not sizes:
        return []
    big = sizes[-1]
    low = ALIGN if big > ALIGN else sizes[0]
    k = max(1, math.ceil(math.log2(big / low))) if big > low else 1
    limit = len(sizes) // k
    slack = ALIGN if big > ALIGN else 0
    # Step 2: split by halving ceilings, largest bucket first
    buckets: list[list[int]] = [[] for _ in range(k)]
    rest, ceiling = sizes, big
    for i in range(k - 1, 0, -1):
        ceiling /= 2
        buckets[i] = [s for s in rest if s > ceiling + slack]
        rest = [s for s in rest if s <= ceiling + slack]
    buckets[0] = rest
    # Step 3: merge small buckets upward
    changed = True
    while changed:
        changed = False
        buckets = [b for b in buckets if b]
        for i in range(len(buckets) - 1):
            large = buckets[i][0] >= LARGE_BLOCK and len(buckets[i]) >= LARGE_RANGE_COUNT
            if len(buckets[i]) < limit and not large:
                buckets[i + 1] = buckets[i] + buckets[i + 1]
                buckets[i] = []
                changed = True
                break
    # Step 4
    return sorted(max(b) for b in buckets if b)


def size_class(ranges: list[int], size: int) -> int:
    """The smallest ceiling >= size, or size itself above all ceilings."""
    i = bisect.bisect_left(ranges, size)
    return ranges[i] if i < len(ranges) else size

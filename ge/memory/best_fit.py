"""Offset-based best-fit planning ("greedy by size", as TFLite's and XLA's heap simulators do). Beyond GE.

Blocks are not shared whole here: every request gets its own offset inside one arena.
Steps:
  1. Order the requests: by size, largest first (ties: longer life first, then allocation order);
     the "breadth" variant instead walks steps from the busiest (most live bytes) to the quietest and takes
     each step's live requests largest first; the "conflict" variant takes first the requests with the most
     bytes they may be alive with (their own included): the crowded ones, which decide the peak.
  2. For each request, collect the already placed requests that may be alive with it (Buffer.conflicts), sorted
     by offset, and scan the gaps between them: take the smallest gap that fits (best fit); with none,
     place it after the highest conflicting request.
  3. The total is the highest end.
"""
from __future__ import annotations

import numpy as np

from .block_assigner import Assignment
from .lifetime import NEVER


def _place(buffers, order, name: str) -> Assignment:
    offsets = [0] * len(buffers)
    placed = []  # (buffer, offset)
    total = 0
    for b in order:
        taken = sorted((off, off + o.size) for o, off in placed if o.conflicts(b))
        best, best_gap, cursor = None, None, 0
        for start, end in taken:
            gap = start - cursor
            if gap >= b.size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, end)
        off = cursor if best is None else best
        offsets[b.id] = off
        placed.append((b, off))
        total = max(total, off + b.size)
    return Assignment(name, tuple(offsets), total)


def best_fit_by_size(buffers) -> Assignment:
    order = sorted(buffers, key=lambda b: (-b.size, -(b.end - b.begin), b.id))
    return _place(buffers, order, "best-fit-size")


def best_fit_by_breadth(buffers) -> Assignment:
    steps = sorted({b.begin for b in buffers} | {b.end for b in buffers if b.end < 2 ** 62})
    live = {t: [b for b in buffers if b.begin <= t <= b.end] for t in steps}
    seen, order = set(), []
    for t in sorted(steps, key=lambda t: -sum(b.size for b in live[t])):
        for b in sorted(live[t], key=lambda b: (-b.size, b.id)):
            if b.id not in seen:
                seen.add(b.id)
                order.append(b)
    order += [b for b in buffers if b.id not in seen]
    return _place(buffers, order, "best-fit-breadth")


def conflict_bytes(buffers) -> np.ndarray:
    """Per request, the bytes of the requests it conflicts with (Buffer.conflicts), its own included."""
    n = len(buffers)
    streams = 1 + max((b.stream for b in buffers), default=0)
    begin = np.array([b.begin for b in buffers], np.int64)
    stream = np.array([b.stream for b in buffers], np.int64)
    free = np.array([[min(b.free_for(s), NEVER) for s in range(streams)] for b in buffers], np.int64)
    free = free.reshape(n, streams)[:, stream]  # free[i, j]: i is free for j's stream from there
    conflicts = (begin[None, :] < free) & (begin[:, None] < free.T)
    return conflicts.astype(np.int64) @ np.array([b.size for b in buffers], np.int64)


def best_fit_by_conflict(buffers) -> Assignment:
    weight = conflict_bytes(buffers) if buffers else ()
    order = sorted(buffers, key=lambda b: (-weight[b.id], -b.size, b.id))
    return _place(buffers, order, "best-fit-conflict")

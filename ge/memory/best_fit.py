"""Offset-based best-fit planning ("greedy by size", as TFLite's and XLA's heap simulators do). Beyond GE.

Blocks are not shared whole here: every request gets its own offset inside one arena.
Steps:
  1. Order the requests: by size, largest first (ties: longer life first, then allocation order);
     the "breadth" variant instead walks steps from the busiest (most live bytes) to the quietest and takes
     each step's live requests largest first; the "conflict" variant takes first the requests with the most
     bytes they may be alive with (their own included): the crowded ones, which decide the peak.
  2. For each request, collect the already placed requests that may be alive with it (Buffer.conflicts, asked
     of a ConflictIndex: conflicts.py), sorted by offset, and scan the gaps between them: take the smallest
     gap that fits (best fit); with none, place it after the highest conflicting request.
  3. The total is the highest end.
"""
from __future__ import annotations

import bisect
import itertools

import numpy as np

from .block_assigner import Assignment
from .conflicts import ConflictIndex, MaxTree


def _place(buffers, order, name: str) -> Assignment:
    offsets = [0] * len(buffers)
    placed = ConflictIndex(buffers)
    total = 0
    for b in order:
        taken = sorted((offsets[o.id], offsets[o.id] + o.size) for o in placed.conflicting(b))
        best, best_gap, cursor = None, None, 0
        for start, end in taken:
            gap = start - cursor
            if gap >= b.size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, end)
        off = cursor if best is None else best
        offsets[b.id] = off
        placed.add(b)
        total = max(total, off + b.size)
    return Assignment(name, tuple(offsets), total)


def best_fit_by_size(buffers) -> Assignment:
    order = sorted(buffers, key=lambda b: (-b.size, -(b.end - b.begin), b.id))
    return _place(buffers, order, "best-fit-size")


def best_fit_by_breadth(buffers) -> Assignment:
    """Steps from the busiest (live bytes over begin <= t <= end, whatever the stream) to the quietest;
    at each, the requests alive there not taken yet, largest first. The not-taken requests sit in a max-tree
    of their ends in begin order: those alive at t are the leaves up to the last begin <= t with ends >= t."""
    steps = sorted({b.begin for b in buffers} | {b.end for b in buffers if b.end < 2 ** 62})
    delta = [0] * (len(steps) + 1)
    for b in buffers:  # live bytes per step: + at its begin, - after its end
        delta[bisect.bisect_left(steps, b.begin)] += b.size
        delta[bisect.bisect_right(steps, b.end)] -= b.size
    live = dict(zip(steps, itertools.accumulate(delta)))
    by_begin = sorted(buffers, key=lambda b: (b.begin, b.id))
    begins = [b.begin for b in by_begin]
    waiting = MaxTree([b.end for b in by_begin])
    order = []
    for t in sorted(steps, key=lambda t: -live[t]):
        alive = waiting.above(bisect.bisect_right(begins, t), t - 1)
        for k in alive:
            waiting.set(k, -1)
        order += sorted((by_begin[k] for k in alive), key=lambda b: (-b.size, b.id))
    seen = {b.id for b in order}
    order += [b for b in buffers if b.id not in seen]
    return _place(buffers, order, "best-fit-breadth")


def conflict_bytes(buffers) -> np.ndarray:
    """Per request, the bytes of the requests it may be alive with by the interval rule alone (a no-task
    Concat's `starts` ignored: ConflictIndex(plain=True)), its own included."""
    index = ConflictIndex(buffers, plain=True)
    for b in buffers:
        index.add(b)
    return np.array([b.size + sum(o.size for o in index.conflicting(b)) for b in buffers], np.int64)


def best_fit_by_conflict(buffers) -> Assignment:
    weight = conflict_bytes(buffers) if buffers else ()
    order = sorted(buffers, key=lambda b: (-weight[b.id], -b.size, b.id))
    return _place(buffers, order, "best-fit-conflict")

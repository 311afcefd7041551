"""Offset-based best-fit planning ("greedy by size", as TFLite's and XLA's heap simulators do). Beyond GE.

Blocks are not shared whole here: every request gets its own offset inside one arena.
Steps:
  1. Order the requests: by size, largest first (ties: longer life first, then allocation order);
     the "breadth" variant instead walks steps from the busiest (most live bytes) to the quietest and takes
     each step's live requests largest first.
  2. For each request, collect the already placed requests that conflict with it in time (or stream), sorted
     by offset, and scan the gaps between them: take the smallest gap that fits (best fit); with none,
     place it after the highest conflicting request.
  3. The total is the highest end.
"""
from __future__ import annotations

from .block_assigner import Assignment


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

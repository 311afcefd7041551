"""Two-sided fit under a cap: an online offset planner aiming at the live lower bound. Beyond GE.

Greedy-by-size planners (best_fit.py) put all same-sized one-step workspaces at one offset, which forces the
long-lived tensors around them to stack (ResNet-50: 1.20x the bound). Filling in time order from both ends
of a cap instead lets consecutive tensors "ping-pong" between the bottom and the top, leaving the middle free
for the big workspace the next node needs.
Steps:
  1. cap = the live lower bound (the smallest arena that could possibly work).
  2. Walk the requests in allocation order. For a request b, the placed requests that conflict with it
     (may be alive at once: Buffer.conflicts) cut [0, cap) into free spans.
  3. Candidates: the bottom and the top position of every free span long enough for b.
  4. Score each candidate by the longest free span it leaves, counting only the conflicting requests that
     will still be alive when b ends (those that die earlier free their space before b does): keep the
     candidate that leaves the longest span, lowest offset on ties.
  5. With no candidate, place b on top of everything it conflicts with and raise the cap to its end.
"""
from __future__ import annotations

from .block_assigner import Assignment
from .lifetime import live_lower_bound


def _free_spans(taken, cap):
    """Free [start, end) spans below cap between sorted (start, end) intervals; and the top of them."""
    spans, cursor = [], 0
    for start, end in taken:
        if start > cursor:
            spans.append((cursor, start))
        cursor = max(cursor, end)
    if cursor < cap:
        spans.append((cursor, cap))
    return spans, cursor


def two_sided_fit(buffers) -> Assignment:
    steps = max((b.begin for b in buffers), default=0) + 1
    cap = live_lower_bound(buffers, steps)  # Step 1
    offsets = [0] * len(buffers)
    placed: dict[int, list] = {}  # stream -> [(buffer, offset)] still alive (allocation order: begins grow)
    ever: dict[int, list] = {}    # stream -> every (buffer, offset) placed: other streams test each one
    for b in sorted(buffers, key=lambda b: b.id):
        mine = placed.setdefault(b.stream, [])
        mine[:] = [(o, off) for o, off in mine if o.end >= b.begin]
        conflicting = [(o, off) for o, off in mine if o.conflicts(b)] + [
            (o, off) for s, lst in ever.items() if s != b.stream or b.starts for o, off in lst
            if o.conflicts(b) and (s != b.stream or o.end < b.begin)]  # (the rest are in mine)
        spans, top = _free_spans(sorted((off, off + o.size) for o, off in conflicting), cap)
        candidates = {p for s, e in spans if e - s >= b.size for p in (s, e - b.size)}  # Step 3
        if candidates:  # Step 4
            staying = [(off, off + o.size) for o, off in conflicting if o.free_for(b.stream) > b.end]

            def score(p):
                left, _ = _free_spans(sorted(staying + [(p, p + b.size)]), cap)
                return -max((e - s for s, e in left), default=0), p
            offset = min(candidates, key=score)
        else:  # Step 5
            offset = top
            cap = max(cap, top + b.size)
        offsets[b.id] = offset
        mine.append((b, offset))
        ever.setdefault(b.stream, []).append((b, offset))
    total = max((offsets[b.id] + b.size for b in buffers), default=0)
    return Assignment("two-sided-fit", tuple(offsets), total)

"""Two-sided fit under a cap: an online offset planner aiming at the live lower bound. Beyond GE.

Greedy-by-size planners (best_fit.py) put all same-sized one-step workspaces at one offset, which forces the
long-lived tensors around them to stack (ResNet-50: 1.20x the bound). Filling in time order from both ends
of a cap instead lets consecutive tensors "ping-pong" between the bottom and the top, leaving the middle free
for the big workspace the next node needs.
Steps:
  1. cap = the live lower bound (the smallest arena that could possibly work).
  2. Walk the requests in allocation order. For a request b, the placed requests that conflict with it
     (may be alive at once: Buffer.conflicts, asked of a ConflictIndex: conflicts.py) cut [0, cap) into free
     spans.
  3. Candidates: the bottom and the top position of every free span long enough for b.
  4. Score each candidate by the longest free span it leaves, counting only the conflicting requests that
     will still be alive when b ends (those that die earlier free their space before b does): keep the
     candidate that leaves the longest span, lowest offset on ties. A candidate lies in one gap between the
     staying requests and splits only that one: its score is the longer of the two pieces and the longest
     other gap (the staying gaps are found once per request, not once per candidate).
  5. With no candidate, place b on top of everything it conflicts with and raise the cap to its end.
"""
from __future__ import annotations

import bisect

from .block_assigner import Assignment
from .conflicts import ConflictIndex
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
    placed = ConflictIndex(buffers)
    for b in sorted(buffers, key=lambda b: b.id):
        conflicting = [(o, offsets[o.id]) for o in placed.conflicting(b)]
        spans, top = _free_spans(sorted((off, off + o.size) for o, off in conflicting), cap)
        candidates = {p for s, e in spans if e - s >= b.size for p in (s, e - b.size)}  # Step 3
        if candidates:  # Step 4
            staying = [(off, off + o.size) for o, off in conflicting if o.free_for(b.stream) > b.end]
            gaps, _ = _free_spans(sorted(staying), cap)
            starts, lengths = [s for s, _ in gaps], [e - s for s, e in gaps]
            longest = sorted(range(len(gaps)), key=lambda k: -lengths[k])[:2]

            def score(p):
                # b splits the one gap of the staying requests that holds it; the others stay as they are
                k = bisect.bisect_right(starts, p) - 1
                other = max((lengths[i] for i in longest if i != k), default=0)
                return -max(other, p - gaps[k][0], gaps[k][1] - p - b.size), p
            offset = min(candidates, key=score)
        else:  # Step 5
            offset = top
            cap = max(cap, top + b.size)
        offsets[b.id] = offset
        placed.add(b)
    total = max((offsets[b.id] + b.size for b in buffers), default=0)
    return Assignment("two-sided-fit", tuple(offsets), total)

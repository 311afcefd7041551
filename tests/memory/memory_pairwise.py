"""The memory planner's pairwise scans as they were before ge.memory.conflicts (issue 46): each request tested
against every other with Buffer.conflicts. Kept as the oracle the indexed planner must equal, answer for
answer (test_conflict_index.py); quadratic, so only for small request sets."""
from __future__ import annotations

import numpy as np

from ge.memory import level2
from ge.memory.block_assigner import Assignment, _classifier, level1
from ge.memory.lifetime import NEVER
from ge.memory.two_sided import _free_spans


def place(buffers, order, name):
    offsets, placed, total = [0] * len(buffers), [], 0
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


def breadth_order(buffers):
    steps = sorted({b.begin for b in buffers} | {b.end for b in buffers if b.end < 2 ** 62})
    live = {t: [b for b in buffers if b.begin <= t <= b.end] for t in steps}
    seen, order = set(), []
    for t in sorted(steps, key=lambda t: -sum(b.size for b in live[t])):
        for b in sorted(live[t], key=lambda b: (-b.size, b.id)):
            if b.id not in seen:
                seen.add(b.id)
                order.append(b)
    return order + [b for b in buffers if b.id not in seen]


def conflict_bytes(buffers):
    n = len(buffers)
    streams = 1 + max((b.stream for b in buffers), default=0)
    begin = np.array([b.begin for b in buffers], np.int64)
    stream = np.array([b.stream for b in buffers], np.int64)
    free = np.array([[min(b.free_for(s), NEVER) for s in range(streams)] for b in buffers], np.int64)
    free = free.reshape(n, streams)[:, stream]
    conflicts = (begin[None, :] < free) & (begin[:, None] < free.T)
    return conflicts.astype(np.int64) @ np.array([b.size for b in buffers], np.int64)


def live_lower_bound(buffers, steps):
    if not buffers:
        return 0
    delta = np.zeros(steps + 2, np.int64)
    for b in buffers:
        delta[b.begin] += b.size
        delta[min(b.end, steps) + 1] -= b.size
    live = np.cumsum(delta)[:steps + 1]
    if not any(b.free_at for b in buffers):
        return int(live.max())
    by_size = sorted(buffers, key=lambda b: -b.size)
    best = 0
    for t in np.argsort(-live, kind="stable")[:32]:
        alive = [b for b in by_size if b.begin <= t <= b.end]
        clique = []
        for b in alive + by_size:
            if all(b is not c and b.conflicts(c) for c in clique):
                clique.append(b)
        best = max(best, sum(b.size for b in clique))
    return best


def two_sided_fit(buffers):
    steps = max((b.begin for b in buffers), default=0) + 1
    cap = live_lower_bound(buffers, steps)
    offsets = [0] * len(buffers)
    placed, ever = {}, {}
    for b in sorted(buffers, key=lambda b: b.id):
        mine = placed.setdefault(b.stream, [])
        mine[:] = [(o, off) for o, off in mine if o.end >= b.begin]
        conflicting = [(o, off) for o, off in mine if o.conflicts(b)] + [
            (o, off) for s, lst in ever.items() if s != b.stream or b.starts for o, off in lst
            if o.conflicts(b) and (s != b.stream or o.end < b.begin)]
        spans, top = _free_spans(sorted((off, off + o.size) for o, off in conflicting), cap)
        candidates = {p for s, e in spans if e - s >= b.size for p in (s, e - b.size)}
        if candidates:
            staying = [(off, off + o.size) for o, off in conflicting if o.free_for(b.stream) > b.end]

            def score(p):
                left, _ = _free_spans(sorted(staying + [(p, p + b.size)]), cap)
                return -max((e - s for s, e in left), default=0), p
            offset = min(candidates, key=score)
        else:
            offset = top
            cap = max(cap, top + b.size)
        offsets[b.id] = offset
        mine.append((b, offset))
        ever.setdefault(b.stream, []).append((b, offset))
    return Assignment("two-sided-fit", tuple(offsets), max((offsets[b.id] + b.size for b in buffers), default=0))


def apart(p, c):
    if p.stream != c.stream or any(m.starts for m in p.members) or any(m.starts for m in c.members):
        return not any(a.conflicts(b) for a in p.members for b in c.members)
    i = j = 0
    pm, cm = p.members, c.members
    while i < len(pm) and j < len(cm):
        a, b = pm[i], cm[j]
        if a.begin <= b.end and b.begin <= a.end:
            return False
        if a.end < b.end:
            i += 1
        else:
            j += 1
    return True


def _adopt(p, c, depth=0):
    if depth > level2.MAX_DEPTH or not apart(p, c):
        return False
    for _, child in p.children:
        if _adopt(child, c, depth + 1):
            return True
    if p.used + c.size <= p.size:
        p.children.append((p.used, c))
        p.used += c.size
        c.is_child = True
        return True
    return False


def assign_blocks(buffers, strategy):
    blocks = level1(buffers, _classifier(buffers, strategy.classes), strategy.reuse_first_release)
    for blk in blocks:
        blk.size = max(m.size for m in blk.members)
    if strategy.ascending_sort:
        order = sorted(blocks, key=lambda b: (-b.size, len(b.members), b.begin))
    else:
        order = sorted(blocks, key=lambda b: (-b.size, -b.begin))
    for i, p in enumerate(order):
        if p.is_child:
            continue
        for c in order[i + 1:]:
            if not c.is_child and not c.children:
                _adopt(p, c)
    offsets, total = level2.layout([b for b in order if not b.is_child], len(buffers))
    return Assignment(strategy.name, offsets, total)

"""GE's level-2 reuse: pack whole blocks inside larger ones whose members never overlap them in time.

Steps (after GE's ReuseBlocksByLifeTime):
  1. Sort blocks by size, largest first. Ties: with ascending_sort, fewer members first then earlier begin;
     without it, later begin first.
  2. For each root block P (not yet a child), and each later block C that is neither a child nor a parent:
     C may join P when no member of C may be alive with a member of P: on one stream, their step intervals
     are disjoint; across streams, the plan's events order them (GE packs one stream only). It then
     first tries, recursively, each of P's children (which must also be free of C in time); failing that it is
     appended after P's last child when it still fits inside P. A C larger than the room left anywhere in P
     (`Block.room`) is not tested in time at all: it could join nowhere.
  3. Only roots take space; a child lives at its parent's offset plus its offset inside the parent.
The time test compares member intervals (GE's interval interleaving idea, without cloning blocks), which is
never weaker than GE's whole-block test "C begins after P ends".
"""
from __future__ import annotations

from dataclasses import dataclass, field

MAX_DEPTH = 100  # GE kMaxDepthNum


@dataclass(eq=False, slots=True)
class Block:
    cls: int                  # level-1 size class
    stream: int
    members: list = field(default_factory=list)    # Buffers, ordered by begin, pairwise disjoint in time
    size: int = 0
    children: list = field(default_factory=list)   # (offset inside this block, Block)
    used: int = 0             # bytes taken by children
    is_child: bool = False
    room: int = 0             # the largest block that could still fit somewhere inside (Step 2's first test)

    @property
    def begin(self) -> int:
        return self.members[0].begin


def _spans(blk: Block, stream: int, seen: dict):
    """blk's members as sorted [begin, free_for(stream)) intervals, once per pack; None when the interval rule
    does not decide (a member with `starts`, or an empty interval)."""
    key = (id(blk), stream)
    if key not in seen:
        spans = sorted((m.begin, m.free_for(stream)) for m in blk.members)
        bad = any(m.starts for m in blk.members) or any(e <= b for b, e in spans)
        seen[key] = None if bad else spans
    return seen[key]


def _apart(p: Block, c: Block, seen: dict) -> bool:
    """No member of c may be alive with a member of p (Buffer.conflicts). Without `starts`, that is: no
    interval [a.begin, a.free_for(c's stream)) of p's members meets one [b.begin, b.free_for(p's stream)) of
    c's (one stream: the closed step intervals). A sweep in begin order finds a meeting in O(|p| + |c|): an
    interval that begins before the furthest end seen on the other side (GE packs one stream only)."""
    ps, cs = _spans(p, c.stream, seen), _spans(c, p.stream, seen)
    if ps is None or cs is None:
        return not any(a.conflicts(b) for a in p.members for b in c.members)
    i = j = 0
    p_end = c_end = -1  # the furthest end seen on each side
    while i < len(ps) and j < len(cs):
        if ps[i][0] <= cs[j][0]:
            begin, end = ps[i]
            i += 1
            if c_end > begin:
                return False
            p_end = max(p_end, end)
        else:
            begin, end = cs[j]
            j += 1
            if p_end > begin:
                return False
            c_end = max(c_end, end)
    # one side is done: the other's rest begins no earlier than its next, against the done side's furthest end
    return not (i < len(ps) and c_end > ps[i][0] or j < len(cs) and p_end > cs[j][0])


def _adopt(p: Block, c: Block, seen: dict, depth: int = 0) -> bool:
    if depth > MAX_DEPTH or c.size > p.room or not _apart(p, c, seen):
        return False
    for _, child in p.children:
        if _adopt(child, c, seen, depth + 1):
            p.room = max(p.size - p.used, *(ch.room for _, ch in p.children))
            return True
    if p.used + c.size <= p.size:
        p.children.append((p.used, c))
        p.used += c.size
        p.room = max(p.size - p.used, *(ch.room for _, ch in p.children))
        c.is_child = True
        return True
    return False


def pack_by_lifetime(blocks: list[Block], ascending_sort: bool = True) -> list[Block]:
    for b in blocks:
        b.room = b.size - b.used
    if ascending_sort:
        order = sorted(blocks, key=lambda b: (-b.size, len(b.members), b.begin))
    else:
        order = sorted(blocks, key=lambda b: (-b.size, -b.begin))
    seen: dict = {}
    for i, p in enumerate(order):
        if p.is_child:
            continue
        for c in order[i + 1:]:
            if not c.is_child and not c.children:
                _adopt(p, c, seen)
    return [b for b in order if not b.is_child]


def layout(roots: list[Block], n: int) -> tuple[tuple[int, ...], int]:
    """Offsets per buffer id and the total, roots laid out back to back."""
    offsets = [0] * n
    total = 0

    def place(blk: Block, base: int) -> None:
        for m in blk.members:
            offsets[m.id] = base
        for off, child in blk.children:
            place(child, base + off)

    for r in roots:
        place(r, total)
        total += r.size
    return tuple(offsets), total

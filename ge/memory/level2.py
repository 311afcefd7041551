"""GE's level-2 reuse: pack whole blocks inside larger ones whose members never overlap them in time.

Steps (after GE's ReuseBlocksByLifeTime):
  1. Sort blocks by size, largest first. Ties: with ascending_sort, fewer members first then earlier begin;
     without it, later begin first.
  2. For each root block P (not yet a child), and each later block C that is neither a child nor a parent:
     C may join P when no member of C may be alive with a member of P: on one stream, their step intervals
     are disjoint; across streams, the plan's events order them (GE packs one stream only). It then
     first tries, recursively, each of P's children (which must also be free of C in time); failing that it is
     appended after P's last child when it still fits inside P.
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

    @property
    def begin(self) -> int:
        return self.members[0].begin


def _apart(p: Block, c: Block) -> bool:
    """No member of c overlaps a member of p in time (both member lists are sorted and disjoint). Across
    streams, every pair of members must be ordered by the events (Buffer.conflicts)."""
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


def _adopt(p: Block, c: Block, depth: int = 0) -> bool:
    if depth > MAX_DEPTH or not _apart(p, c):
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


def pack_by_lifetime(blocks: list[Block], ascending_sort: bool = True) -> list[Block]:
    if ascending_sort:
        order = sorted(blocks, key=lambda b: (-b.size, len(b.members), b.begin))
    else:
        order = sorted(blocks, key=lambda b: (-b.size, -b.begin))
    for i, p in enumerate(order):
        if p.is_child:
            continue
        for c in order[i + 1:]:
            if not c.is_child and not c.children:
                _adopt(p, c)
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

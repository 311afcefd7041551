"""GE's block assigners: level-1 reuse by free lists, level-2 packing, then a sequential layout.

A strategy is GE's ReuseStrategy: (use_range, ascending_sort, reuse_first_release) plus how sizes map to
classes. Steps of `assign_blocks(buffers, strategy)`:
  1. Level 1 (online, in allocation order). Before serving a request that begins at step t, every block whose
     current holder ended before t is released onto its stream's free list for its size class, in release
     order (end step; at equal ends, inputs released by a node before the workspaces and unread outputs that
     the next node frees). The request takes a free block of exactly its class on its stream: the last
     released first by default, the first released with `reuse_first_release`. No match: a new block.
  2. Resize: each block shrinks to its largest member (a class ceiling can exceed every member).
  3. Level 2 (`level2.pack_by_lifetime`): whole blocks nest inside larger ones whose members never overlap
     them in time.
  4. Layout: root blocks get consecutive offsets in level-2 order; a child sits at its parent's offset plus
     its own offset inside the parent; every member of a block takes the block's offset.
Assigners (GE's names): binary-block (exact 512-aligned sizes), max-block (one class: the largest request,
so level 1 is pure lifetime reuse), and range-binary-block-{descending,ascending}-{frfr,frlr} (binary ranges
of `ranges.py`; frfr = first released first reused, frlr = first released last reused).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from .level2 import Block, layout, pack_by_lifetime
from .ranges import binary_ranges, size_class


@dataclass(frozen=True, slots=True)
class Strategy:
    name: str
    classes: str              # "exact" | "max" | "binary"
    ascending_sort: bool = True
    reuse_first_release: bool = False


@dataclass(frozen=True, slots=True)
class Assignment:
    """An assigner's answer: an offset per buffer id and the bytes it needs."""
    assigner: str
    offsets: tuple[int, ...]
    total: int
    notes: dict = field(default_factory=dict, compare=False)


BLOCK_STRATEGIES = (
    Strategy("binary-block", "exact"),
    Strategy("max-block", "max"),
    Strategy("range-binary-block-descending-frlr", "binary", False, False),
    Strategy("range-binary-block-descending-frfr", "binary", False, True),
    Strategy("range-binary-block-ascending-frlr", "binary", True, False),
    Strategy("range-binary-block-ascending-frfr", "binary", True, True),
)


def _classifier(buffers, classes: str):
    if classes == "exact":
        return lambda s: s
    if classes == "max":
        top = max((b.size for b in buffers), default=0)
        return lambda s: max(top, s)
    ranges = binary_ranges([b.size for b in buffers])
    return lambda s: size_class(ranges, s)


def level1(buffers, classify, first_release: bool = False) -> list[Block]:
    """Step 1: greedy reuse through per-(stream, class) free lists, in allocation order."""
    blocks: list[Block] = []
    active: list = []      # heap of (end, late_release, begin, id, block)
    free: dict = {}        # (stream, class) -> released blocks, in release order
    for b in sorted(buffers, key=lambda b: b.id):
        while active and active[0][0] < b.begin:
            blk = heapq.heappop(active)[-1]
            free.setdefault((blk.stream, blk.cls), []).append(blk)
        cls = classify(b.size)
        queue = free.get((b.stream, cls), [])
        # a request also written on other streams takes only a block that is free there as well
        fits = [k for k, blk in enumerate(queue) if not blk.members[-1].conflicts(b)] if b.starts \
            else range(len(queue))
        if fits:
            blk = queue.pop(fits[0] if first_release else fits[-1])
        else:
            blk = Block(cls, b.stream)
            blocks.append(blk)
        blk.members.append(b)
        heapq.heappush(active, (b.end, b.late_release, b.begin, b.id, blk))
    return blocks


def assign_blocks(buffers, strategy: Strategy) -> Assignment:
    blocks = level1(buffers, _classifier(buffers, strategy.classes), strategy.reuse_first_release)
    for blk in blocks:  # Step 2
        blk.size = max(m.size for m in blk.members)
    roots = pack_by_lifetime(blocks, strategy.ascending_sort)  # Step 3
    offsets, total = layout(roots, len(buffers))  # Step 4
    return Assignment(strategy.name, offsets, total,
                      {"blocks": len(blocks), "roots": len(roots)})


def no_reuse(buffers) -> Assignment:
    """ge.exec.disableReuseMemory: every request its own block, in allocation order."""
    offsets, total = [0] * len(buffers), 0
    for b in sorted(buffers, key=lambda b: b.id):
        offsets[b.id] = total
        total += b.size
    return Assignment("no-reuse", tuple(offsets), total)

"""Gear memory split (GE's DynamicBatchMemAssigner, docs/ge-reference.md §2.10; §8.5: with dynamic batch the
largest split is 400 MB): the feature map the batch gears share, cut into pieces that are separate buffers.

GE (dynamic_batch_mem_assigner.cc, CreateBlocks) walks the largest batch's blocks in order and starts a new
virtual block when adding the next one would pass kMaxSplitSizeForDynamicBatch (400 MiB), in extend-size
memory mode only; the smaller batches' blocks are packed into those. ge does the same per gear plan
(Options.gear_memory_split_bytes; ge.exec.staticMemoryPolicy=1/2 sets GE's 400 MiB):
  1. Runs: the byte ranges of the feature-map slot (runtime_v1/model.py: the feature map, workspaces
     included, then the atomic region) that tensors and workspaces use, overlapping ranges merged: a cut
     never falls inside a run, so no tensor straddles two pieces.
  2. Cuts: walk the runs in offset order; start a new piece at a run when the piece would pass the limit
     with it (and the piece holds something, and the cut is ALIGN-aligned, so offsets inside a piece keep
     their alignment). A run bigger than the limit is a piece of its own, as in GE.
  The gears compile with GE's block strategies (memory_assigner "blocks", ge/compiler.py compile_gears):
  ge's offset planners overlap tensors partially, so their runs chain across the whole map and leave no cut.
  3. The set's buffers: piece k is as big as the largest gear's piece k (`piece_sizes`), so every gear's
     pieces fit; each gear's Executor finds its tensors by (piece, offset in it).
"""
from __future__ import annotations

from ge.npu.memory import ALIGN, align_up
from ge.plan import Plan

from .model import feature_bytes


def runs(plan: Plan) -> list[tuple[int, int]]:
    """Step 1: [(start, end)] of the feature-map slot's used bytes, overlaps merged, in offset order."""
    mem = plan.memory
    atomic_at = align_up(int(mem.segments["feature_map"]))
    spans = []
    for m in mem.tensors:
        if m.segment in ("feature_map", "atomic") and m.offset is not None and m.bytes:
            at = m.offset + (atomic_at if m.segment == "atomic" else 0)
            spans.append((at, at + m.bytes))
    for step, ws in enumerate(mem.workspaces):
        if step not in mem.fixed_workspaces:
            spans += [(off, off + size) for off, size in ws if size]
    merged: list[list[int]] = []
    for s, e in sorted(spans):
        if merged and s < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return [tuple(r) for r in merged]


def cuts(plan: Plan, limit: int) -> tuple[int, ...]:
    """Step 2: the offsets where pieces 1.. start (() for one piece: limit 0, or the slot fits in it)."""
    if limit <= 0 or feature_bytes(plan) <= limit:
        return ()
    out, start = [], 0
    for s, e in runs(plan):
        if e - start > limit and s > start and s % ALIGN == 0:
            out.append(s)
            start = s
    return tuple(out)


def piece_sizes(plan: Plan, at: tuple[int, ...]) -> list[int]:
    """Bytes of each piece of `plan`'s feature-map slot cut at `at`."""
    bounds = (0, *at, feature_bytes(plan))
    return [b - a for a, b in zip(bounds, bounds[1:])]


def set_pieces(plans: dict, limit: int) -> tuple[dict, list[int]]:
    """Step 3: ({gear: its cuts}, [bytes of each buffer the set holds])."""
    at = {g: cuts(p, limit) for g, p in plans.items()}
    sizes: list[int] = []
    for g, p in plans.items():
        for k, n in enumerate(piece_sizes(p, at[g])):
            if k == len(sizes):
                sizes.append(0)
            sizes[k] = max(sizes[k], n)
    return at, sizes

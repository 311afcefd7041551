"""plan_memory(plan) -> MemoryPlan: lifetimes, an assigner (hybrid by default), then segment layout.

Steps:
  1. Lifetimes and feature-map requests on the plan's order (`lifetime.py`), and the live lower bound.
  2. Assign feature-map offsets: no reuse when `disable_reuse_memory` (ge.exec.disableReuseMemory=1),
     else `options.memory_assigner` ("hybrid": every candidate, the smallest total wins).
     2b. Requests of no-reuse nodes (Options.no_reuse_ops / env OP_NO_REUSE_MEM, by node name or op type:
     their outputs and workspaces) take no part in the assigners: each gets its own block, appended after the
     reused region in allocation order, never shared with any other request (GE's OP_NO_REUSE_MEM, §2.5).
     An alias node (Reshape...) has no request: listing it changes nothing, its output stays a view.
     The lower bound becomes the bound of the reused requests plus every no-reuse block.
  3. Weights back to back; io blocks (produced outputs, then graph inputs by size ascending); atomic
     outputs back to back (one region, so one clean zeroes them all); state pairs (Options.state_pairs)
     in the variable segment, input then output block per pair (variables.py); 512-aligned.
     2c. Requests of tasks that keep their load-time addresses (Options.fixed_address_ops: their tensors'
     blocks and their workspaces) are planned by the same assigner apart, into the fixed segment, so the
     feature_map segment can be re-based (GE's fixed / refreshable feature memory).
  4. Every tensor takes its symbol root's segment and offset; workspaces take their request's offset; an
     input of a no-task Concat (and its views) sits at the Concat output's offset plus its place in it.
  5. With verification on (Options.verify_passes / GE_VERIFY_PASSES=1) the independent checker runs.
"""
from __future__ import annotations

import dataclasses
import os
import time
from types import MappingProxyType

from ..npu.memory import align_up
from ..plan import MemoryPlan, MemoryStats, TensorMemory
from .block_assigner import Assignment
from .hybrid import assign
from ..plan import fixed_address_steps
from .lifetime import ATOMIC, DYNAMIC, FEATURE_MAP, FIXED, IO, VARIABLE, WEIGHTS, compute_lifetimes, \
    live_lower_bound, no_reuse_bytes, no_reuse_steps
from .variables import layout_states


def plan_memory(plan) -> MemoryPlan:
    t0 = time.perf_counter()
    opts = plan.options
    # Step 1
    life = compute_lifetimes(plan)
    steps = no_reuse_steps(plan)
    fixed_steps = fixed_address_steps(plan)
    is_fixed = lambda b: (life.segment[b.key[1]] == FIXED if b.key[0] == "tensor"  # noqa: E731
                          else b.key[1] in fixed_steps)
    fixed = [dataclasses.replace(b, id=i) for i, b in enumerate(b for b in life.buffers if is_fixed(b))]
    rest = [b for b in life.buffers if not is_fixed(b)] if fixed else list(life.buffers)
    own = [b for b in rest if b.begin in steps]  # a request begins at its node's step
    shared = [dataclasses.replace(b, id=i) for i, b in enumerate(b for b in rest if b.begin not in steps)]
    own_bytes = sum(b.size for b in own)
    bound = live_lower_bound(shared, life.steps) + own_bytes
    # Step 2
    name = "no-reuse" if opts.disable_reuse_memory else opts.memory_assigner
    winner, totals, _ = assign(shared, name)
    fm = {b.key: (winner.offsets[b.id], b.size) for b in shared}
    if own:  # Step 2b
        cursor = winner.total
        for b in own:
            fm[b.key] = (cursor, b.size)
            cursor += b.size
        winner = Assignment(winner.assigner, winner.offsets, cursor, winner.notes)
        totals = {n: t + own_bytes for n, t in totals.items()}
    fixed_bytes, fixed_at = 0, {}   # Step 2c
    if fixed:
        placed, _, _ = assign(fixed, name)
        fixed_at = {b.key: (placed.offsets[b.id], b.size) for b in fixed}
        fixed_bytes = placed.total
    # Step 3
    offsets = {}
    cursor = 0
    for t in sorted(plan.constants):
        offsets[t] = cursor
        cursor += align_up(plan.tensors[t].nbytes or 0)
    weights_bytes = cursor
    cursor = 0
    io_roots = {life.root[t] for t, s in life.segment.items()
                if s == IO and plan.tensors[life.root[t]].is_static} - set(life.parts)  # parts: in their output
    inputs = set(plan.inputs)
    for t in sorted(io_roots - inputs) + sorted(io_roots & inputs, key=lambda t: (plan.tensors[t].nbytes, t)):
        offsets[t] = cursor
        cursor += align_up(plan.tensors[t].nbytes)
    io_bytes = cursor
    cursor = 0
    for t in sorted({life.root[t] for t, s in life.segment.items() if s == ATOMIC}):
        offsets[t] = cursor
        cursor += align_up(plan.tensors[t].nbytes)
    atomic_bytes = cursor
    variable_bytes = layout_states(plan, plan.states, offsets)
    for key, (off, _) in (*fm.items(), *fixed_at.items()):
        if key[0] == "tensor":
            offsets[key[1]] = off
    for part, (out, delta) in life.parts.items():
        offsets[part] = offsets[out] + delta
    # Step 4
    tensors = []
    for t in plan.tensors:
        r = life.root[t.index]
        seg = life.segment[t.index]
        whole = life.parts.get(r, (r,))[0]  # the block's root: a no-task Concat's output for its parts
        tensors.append(TensorMemory(
            t.index, t.name, seg,
            None if seg == DYNAMIC else offsets.get(r, 0 if seg in (FEATURE_MAP, FIXED) else None), t.nbytes,
            plan.tensors[r].name if r != t.index else None, life.first.get(whole), life.last.get(whole),
            plan.tensors[whole].name if whole != r else None))
    at = {**fm, **fixed_at}
    workspaces = tuple(
        tuple((at[("workspace", n.step, k)][0], w.nbytes) if ("workspace", n.step, k) in at else (0, 0)
              for k, w in enumerate(n.launch.workspaces))
        if n.launch is not None else () for n in plan.nodes)
    stats = MemoryStats(winner.total, no_reuse_bytes(life.buffers), bound, winner.assigner,
                        MappingProxyType(totals), time.perf_counter() - t0)
    segments = MappingProxyType({WEIGHTS: weights_bytes, FEATURE_MAP: winner.total, ATOMIC: atomic_bytes,
                                 IO: io_bytes, **({VARIABLE: variable_bytes} if variable_bytes else {}),
                                 **({FIXED: fixed_bytes} if fixed else {})})
    mp = MemoryPlan(tuple(tensors), workspaces, segments, stats, frozenset(fixed_steps) if fixed else frozenset())
    # Step 5
    if opts.verify_passes or os.environ.get("GE_VERIFY_PASSES") == "1":
        from .verify import verify_memory
        verify_memory(plan, mp)
    return mp

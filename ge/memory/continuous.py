"""Concat without a copy (GE's no-task Concat with continuous input memory, "no padding" variant).

When a Concat's inputs can be written by their producers straight into their slices of its output, the
memory plan places them there and the Concat does nothing at run time (PlanNode.no_task). That holds when:
  1. the Concat keeps one byte order: every dim before the axis is 1 (NCHW with batch 1 on channels), so
     input k is the contiguous byte range [sum of earlier inputs, + its size) of the output;
  2. the output is a planned feature-map tensor of its own, or a static graph output of its own (its io block:
     the producers then write straight into the caller's array, runtime_v1; runtime_v2 gives those parts
     blocks of their own and runs the Concat); not a view, not a graph input;
  3. each input is a distinct feature-map tensor computed by a static task of its own (not a graph input,
     constant, view, graph output, dynamic or no-reuse node's output), in no other chosen Concat, and not
     itself the output of a chosen Concat (no nesting).
  4. memory first: a block holding a whole Concat lives from its first input to its last reader, which can
     make the blocks harder to pack (DenseNet: 1.05x the bound with every chain link free, 1.00x without),
     so `choose` keeps in place only the Concats that make the plan no larger than with copies, except
     the ones marked `_continuous_input` (a fused collective's input, passes/fuse_collectives.py: GE
     requires continuous memory there), kept whenever rules 1-3 hold.
Options.concat_in_place=False (or GE_DISABLE_PASSES=concat_in_place) keeps every Concat a copy.
"""
from __future__ import annotations

import dataclasses
import math
import os

from ..plan import ACTIVATION
from .lifetime import FEATURE_MAP, IO, _segments, _symbols, no_reuse_steps
from .planner import plan_memory

NAME = "concat_in_place"


def enabled(options) -> bool:
    off = {p.strip() for p in os.environ.get("GE_DISABLE_PASSES", "").split(",")}
    return options.concat_in_place and NAME not in off and NAME not in options.disabled_passes


def in_place_concats(plan) -> frozenset[int]:
    """Steps of the Concats whose inputs can be laid out in their output (rules 1-3 above)."""
    root, life = _symbols(plan)
    seg = _segments(plan, root)
    skip = no_reuse_steps(plan)
    producer = {t: n for n in plan.nodes for t in n.outputs if t >= 0}
    own = lambda t: seg[t] == FEATURE_MAP and root[t] == t and life[t] == t  # noqa: E731
    viewed = {n.inputs[n.kernel.alias] for n in plan.nodes if n.may_alias}
    taken: set[int] = set()
    chosen = []
    for n in plan.nodes:
        if n.op_type != "Concat" or n.launch is None or n.step in skip or n.outputs[0] < 0:
            continue
        out = plan.tensors[n.outputs[0]]
        axis = int(n.attrs.get("axis", 0)) % max(len(out.shape), 1)
        graph_output = seg[out.index] == IO and out.index not in plan.inputs and out.is_static \
            and root[out.index] == out.index == life[out.index] and plan.outputs.count(out.index) == 1
        if not (own(out.index) or graph_output) or out.index in taken or math.prod(out.shape[:axis]) != 1:
            continue
        ins = n.inputs
        if len(set(ins)) != len(ins) or not all(
                t >= 0 and t not in taken and own(t) and plan.tensors[t].kind == ACTIVATION
                and plan.tensors[t].nbytes and t in producer and producer[t].launch is not None
                and not producer[t].no_task and producer[t].step not in skip and t not in viewed
                for t in ins):
            continue
        taken.update(ins)
        taken.add(out.index)
        chosen.append(n.step)
    return frozenset(chosen)


def choose(plan) -> frozenset[int]:
    """The in-place Concats to keep (rule 4): all of them when that costs no feature-map bytes over copies;
    else, in order, each one that adds none to those kept so far (trials use the copy plan's winning
    assigner: the hybrid can only do better)."""
    if not enabled(plan.options):
        return frozenset()
    steps = in_place_concats(plan)
    if not steps:
        return steps
    required = {n.step for n in plan.nodes if n.step in steps and n.attrs.get("_continuous_input")}
    copies = plan_memory(dataclasses.replace(plan, memory=None)).stats

    def fits(keep, options) -> bool:
        nodes = tuple(dataclasses.replace(n, no_task=n.step in keep) for n in plan.nodes)
        mem = plan_memory(dataclasses.replace(plan, nodes=nodes, options=options, memory=None))
        return mem.stats.feature_map_bytes <= copies.feature_map_bytes
    if fits(steps, plan.options):
        return steps
    trial = plan.options.replace(memory_assigner=copies.assigner)
    keep = set(required)
    for s in sorted(steps - keep):
        if fits(keep | {s}, trial):
            keep.add(s)
    return frozenset(keep)

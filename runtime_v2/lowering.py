"""Lowering a Plan for runtime_v2: per step, what the loop does, as integers, callables and tuples.

Step by step (GE's RT2 lowering in miniature: Alloc before the launch, Free after the last consumer):
  1. Symbols: an output of a node that may alias (Reshape, Flatten, ...) joins its source's symbol; a
     symbol lives until the last read of any member (or its last producer when nobody reads it).
  2. Where each produced tensor lives:
     ARENA - a feature-map tensor of a static launch: a view into the instance's planned arena;
     HOST  - in a symbol holding a graph output: a fresh array handed to the caller (zero copy out);
     ALLOC - everything else (dynamic shapes, unplanned): a span of the caching allocator.
  3. Kinds of steps: BOUND (static, every output and workspace in the arena: the whole argument tail is
     bound once per instance), STATIC (static launch with some HOST/ALLOC outputs), ALIAS (no task, the
     output views its source; a no-task Concat's output is already its arena view), DYNAMIC (shapes known at
     run time: see dynamic.py). A static node placed on the host CPU engine (host_cpu.py) is DYNAMIC too:
     its host step is called as a dynamic node is, and writes its planned (ARENA) outputs in place.
  4. Releases: at the end step of a symbol, the ALLOC members give their spans back.
  5. Outputs whose symbol holds arena memory, a feed or a constant are copied before they are returned.
"""
from __future__ import annotations

from dataclasses import dataclass

from ge.kernels.registry import Launch, cleaning
from ge.plan import ACTIVATION, Plan, PlanNode

BOUND, STATIC, ALIAS, DYNAMIC = 0, 1, 2, 3
ARENA, HOST, ALLOC = 0, 1, 2


@dataclass(frozen=True, slots=True)
class OutSlot:
    """How a step gets one output: tensor index, placement, and (static) elements, dtype and bytes."""
    tensor: int
    place: int
    count: int
    dtype: object
    nbytes: int


@dataclass(frozen=True, slots=True)
class Step:
    node: PlanNode
    kind: int
    fn: object                 # kernel function (BOUND/STATIC)
    ins: tuple                 # tensor indices passed to fn; ALIAS: (source,)
    outs: tuple[OutSlot, ...]
    args: tuple
    release: tuple             # ALLOC tensors whose symbol ends at this step


@dataclass(frozen=True)
class Lowered:
    steps: tuple[Step, ...]
    arena: frozenset          # tensors living in the arena
    place: dict               # produced tensor -> ARENA | HOST | ALLOC
    copy_out: frozenset       # outputs copied before they are returned
    host_cpu: frozenset = frozenset()   # steps on the host CPU engine (host_cpu.py)


def passed_inputs(node: PlanNode, launch: Launch) -> tuple:
    if launch.inputs is not None:
        return tuple(node.inputs[i] for i in launch.inputs)
    return tuple(t for t in node.inputs if t >= 0)


def lower(plan: Plan, host_cpu: frozenset = frozenset()) -> Lowered:
    """`host_cpu`: the steps placed on the host CPU engine (host_cpu.host_cpu_steps)."""
    root, members = symbols(plan)
    arena = _arena_tensors(plan)
    out_roots = {root[t] for t in plan.outputs}
    place = {}
    for node in plan.nodes:
        for t in node.outputs:
            if t >= 0:
                place[t] = ARENA if t in arena else HOST if root[t] in out_roots else ALLOC
    release = _releases(plan, root, members, out_roots, place)
    steps = tuple(_step(plan, node, place, release.get(node.step, ()), node.step in host_cpu) for node in plan.nodes)
    foreign = {r for r, ms in members.items()
               if any(m in arena or plan.tensors[m].kind != ACTIVATION for m in ms)}
    copy_out = frozenset(t for t in plan.outputs if root[t] in foreign)
    return Lowered(steps, frozenset(arena), place, copy_out, host_cpu)


def symbols(plan: Plan):
    """Step 1: life roots through every may-alias node."""
    root = list(range(len(plan.tensors)))
    for node in plan.nodes:
        if node.may_alias and node.outputs and node.outputs[0] >= 0:
            src = node.inputs[node.kernel.alias]
            if src >= 0:
                root[node.outputs[0]] = root[src]
    members: dict[int, list[int]] = {}
    for t, r in enumerate(root):
        members.setdefault(r, []).append(t)
    return root, members


def _arena_tensors(plan: Plan) -> set[int]:
    mem = plan.memory
    if mem is None:
        return set()
    launched = {t for n in plan.nodes if n.launch is not None for t in n.outputs if t >= 0}
    return {m.index for m in mem.tensors if m.segment in ("feature_map", "fixed") and m.index in launched}


def _releases(plan, root, members, out_roots, place) -> dict[int, tuple]:
    """Step 4: end step of each symbol -> its ALLOC members."""
    end: dict[int, int] = {}
    for node in plan.nodes:
        for t in (*node.inputs, *node.outputs):
            if t >= 0:
                r = root[t]
                end[r] = max(end.get(r, -1), node.step)
    out: dict[int, list[int]] = {}
    for r, step in end.items():
        if r in out_roots:
            continue
        owned = [m for m in members[r] if place.get(m) == ALLOC]
        if owned:
            out.setdefault(step, []).extend(owned)
    return {s: tuple(ts) for s, ts in out.items()}


def _step(plan: Plan, node: PlanNode, place, release, on_host: bool = False) -> Step:
    launch = node.launch
    if node.is_dynamic:
        outs = tuple(OutSlot(t, place.get(t, ALLOC), 0, plan.tensors[t].dtype, 0) for t in node.outputs)
        return Step(node, DYNAMIC, None, (), outs, (), release)
    if launch is None:
        return Step(node, ALIAS, None, (node.inputs[node.kernel.alias],), (), (), release)
    if node.no_task and place.get(node.outputs[0]) == ARENA:
        # its inputs were written into its output's arena view: alias the output to itself. Without the
        # arena (a plan with no memory plan) nothing laid them out there: the Concat copies, as its launch says
        return Step(node, ALIAS, None, (node.outputs[0],), (), (), release)
    outs = []
    for t in node.outputs:
        spec = plan.tensors[t]
        outs.append(OutSlot(t, place[t], spec.nbytes // spec.dtype.itemsize, spec.dtype, spec.nbytes))
    if on_host:
        return Step(node, DYNAMIC, None, (), tuple(outs), (), release)
    kind = BOUND if all(o.place == ARENA for o in outs) else STATIC  # (atomic outputs are never ARENA)
    ins = passed_inputs(node, launch)
    return Step(node, kind, cleaning(launch, len(ins)), ins, tuple(outs), launch.args, release)

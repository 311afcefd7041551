"""Verifying a loaded plan as a whole, before any runtime sees it; nothing derived in the file is trusted.

read.py checked every field on its own (types, ranges, dtypes, each static node's inferred outputs against
its stored tensors). Here the plan as a whole:
  1. Graph: every tensor is defined once (a graph input, a constant, or one node's output), the inputs are
     `input` tensors and the constants `const` ones, names are unique, and every node reads only tensors
     defined before it (the step order is a topological order).
  2. Streams: the events run forward between different streams with dense ids, and every data dependency
     across streams is ordered by stream order + events (ge.schedule.events.verify_events).
  3. Memory (a plan that has one): the memory verifier (ge.memory.verify, independent of the assigners) on
     the loaded plan: placement of every tensor inside its segment, aliases at their sources, no-task
     Concat inputs back to back, and no two things sharing bytes unless all uses of one happen before the
     other is defined (under the plan's streams and events). Then what runtime_v1 addresses beyond it:
     every static node's workspaces are planned, as large as its kernel asks, inside the feature map; the
     segments the runtimes lay out exist and are no larger than their contents need; alias_of and part_of
     name tensors of the plan.
A failure is a ModelLoadError listing the first problems, each naming the node, tensor or event.
"""
from __future__ import annotations

from ..errors import ModelLoadError
from ..memory.verify import MemoryPlanError, verify_memory
from ..npu.memory import ALIGN, align_up
from ..schedule.events import verify_events

MAX_ERRORS = 12


def verify_plan(plan) -> None:
    """The checks above on the plan and on every body of its control nodes (each a plan of its own)."""
    for n in plan.nodes:
        for _, body, _ in n.bodies:
            verify_plan(body)
    errors: list[str] = []
    _graph(plan, errors)
    if not errors:
        _streams(plan, errors)
    if not errors and plan.memory is not None:
        _memory(plan, errors)
    if errors:
        raise ModelLoadError(f"plan '{plan.name}' is not valid ({len(errors)} problems):\n  "
                             + "\n  ".join(errors[:MAX_ERRORS]))


def _graph(plan, errors) -> None:
    names = [t.name for t in plan.tensors]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        errors.append(f"tensor name '{dup}' is used twice")
    defined = {}
    for t in plan.inputs:
        if plan.tensors[t].kind != "input":
            errors.append(f"graph input '{plan.tensors[t].name}' is a {plan.tensors[t].kind} tensor")
        defined[t] = "a graph input"
    for t in plan.constants:
        defined[t] = "a constant"
    for t in plan.tensors:
        if t.kind == "const" and t.index not in plan.constants:
            errors.append(f"constant '{t.name}' has no value in weights.npz")
        if t.kind == "input" and t.index not in plan.inputs:
            errors.append(f"tensor '{t.name}' is an input tensor but not a graph input")
    for n in plan.nodes:
        for k, t in enumerate(n.inputs):
            if t >= 0 and t not in defined:
                errors.append(f"node '{n.name}' (step {n.step}) reads '{plan.tensors[t].name}' (input {k}) before "
                              "anything defines it: the steps are not a topological order")
        for t in n.outputs:
            if t in defined:
                errors.append(f"node '{n.name}' defines '{plan.tensors[t].name}', already {defined[t]}")
            elif plan.tensors[t].kind != "activation":
                errors.append(f"node '{n.name}' defines '{plan.tensors[t].name}', a {plan.tensors[t].kind} tensor")
            defined[t] = f"the output of '{n.name}'"
    for t in plan.outputs:
        if t not in defined:
            errors.append(f"graph output '{plan.tensors[t].name}' is never defined")


def _streams(plan, errors) -> None:
    producer = {t: n.step for n in plan.nodes for t in n.outputs}
    preds = [sorted({producer[t] for t in n.inputs if t in producer}) for n in plan.nodes]
    streams = [n.stream for n in plan.nodes]
    for e in plan.events:
        if (e.src_stream, e.dst_stream) != (streams[e.record_after], streams[e.wait_before]):
            errors.append(f"event e{e.id} says streams s{e.src_stream} -> s{e.dst_stream}, its steps are on "
                          f"s{streams[e.record_after]} -> s{streams[e.wait_before]}")
    errors += verify_events(preds, streams, plan.events)[:MAX_ERRORS]


def _memory(plan, errors) -> None:
    mem = plan.memory
    names = {t.name for t in plan.tensors}
    # a dynamic node's outputs are runtime_v2's to allocate even when their shapes are static (a Shape node
    # of a symbolic input: ge.memory.lifetime puts them in the dynamic segment)
    by_dynamic = {t for n in plan.nodes if n.is_dynamic for t in n.outputs}
    for m in mem.tensors:
        for what, ref in (("alias_of", m.alias_of), ("part_of", m.part_of)):
            if ref is not None and ref not in names:
                errors.append(f"tensor '{m.name}': {what} '{ref}' is not a tensor of the plan")
        t = plan.tensors[m.index]
        if t.is_static and m.segment == "dynamic" and m.index not in by_dynamic:
            errors.append(f"static tensor '{m.name}' has no place (segment dynamic)")
        if t.is_static and m.bytes is not None and m.bytes != t.nbytes:
            errors.append(f"tensor '{m.name}' has {m.bytes} bytes in the memory plan, its shape needs {t.nbytes}")
    if errors:
        return
    try:
        verify_memory(plan, mem)
    except MemoryPlanError as e:
        errors.append(str(e))
        return
    ends = {}
    for t, m in zip(plan.tensors, mem.tensors):
        if m.offset is not None and t.is_static and m.segment != "dynamic":
            ends[m.segment] = max(ends.get(m.segment, 0), m.offset + t.nbytes)
    fm = mem.segments.get("feature_map", 0)
    for n, planned in zip(plan.nodes, mem.workspaces):
        need = n.launch.workspaces if n.launch is not None and not n.no_task else ()
        if len(planned) != len(need):
            errors.append(f"node '{n.name}' has {len(planned)} planned workspaces, its kernel uses {len(need)}")
            continue
        for k, ((off, nbytes), w) in enumerate(zip(planned, need)):
            if nbytes < w.nbytes or off + nbytes > fm or off % ALIGN:
                errors.append(f"node '{n.name}' workspace {k}: [{off}, {off + nbytes}) for {w.nbytes} bytes does "
                              f"not fit the feature map ({fm} bytes, {ALIGN}-aligned offsets)")
            ends["feature_map"] = max(ends.get("feature_map", 0), off + nbytes)
    for seg in ("weights", "feature_map", "io"):
        if seg not in mem.segments:
            errors.append(f"the memory plan has no '{seg}' segment")
    for seg, size in mem.segments.items():
        if size > align_up(ends.get(seg, 0)) + ALIGN:
            errors.append(f"segment '{seg}' is {size} bytes, its contents need {ends.get(seg, 0)}")

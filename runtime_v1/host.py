"""Host tasks: the string and ONNX-ML ops (ge/kernels/host_tasks.py) and static pieces, run from a stream's
program as GE runs AICPU tasks inside a sunk model.

A host task is a step of its stream's program like a fallback call (model.py: a Python call between native
runs, after its WAIT rows, before its RECORD rows), so the plan's events order it against the tasks of other
streams. Values (`HostValues`, decided at load):
  - held: the values that are Python objects or whose size the data decides (string tensors, sequences, maps,
    StringSplit's parts) and every output of a host task live in a side table, `Instance.values`
    ({tensor: value}, filled per run: string feeds, then each host task's outputs), never in the arena
    (its bytes cannot hold a Python object); graph outputs among them are returned from it;
  - staged: a held numeric output that a task reads (a Cast after a LinearClassifier) also gets bytes in a
    staging region of the arena (one more base slot, laid out at load, no reuse: these are small), copied
    there when the host task ends; tasks see an ordinary buffer;
  - a host task reads a task's output, a numeric feed or a constant where it is (a view of the arena, the
    bound feed, the plan's constant).
Each result is checked against the plan (kind, dtype, static dims: ge.kernels.control.check_value): the
shapes inferred at compile time (host_tasks.output_shapes) are what the tasks after it were bound for. A
result that is a view of an arena input is copied (the arena's bytes are reused by later tasks).
A static piece (ge/partition.py's PartitionedCall) is a host task too: its body runs on an Executor of its own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ge.errors import GEError
from ge.kernels.control import HostCall, check_value
from ge.npu.memory import align_up
from ge.plan import Plan, PlanNode, host_only, host_task, sunk_plan


class Held(NamedTuple):
    """A host task's input from the run's side table (Instance.values)."""
    tensor: int


class ArenaView(NamedTuple):
    """A host task's input read where a task wrote it: a view of slot `slot` (or the array bound there)."""
    slot: int
    offset: int
    dtype: np.dtype
    shape: tuple


@dataclass(frozen=True)
class HostValues:
    """Where a plan's host values live on runtime_v1 (module doc)."""
    held: frozenset          # tensors in the side table
    staged: dict             # tensor -> byte offset in the staging region
    nbytes: int              # of the staging region


def host_values(plan: Plan) -> HostValues:
    nodes = [n for n in plan.nodes if host_task(n)]
    made = {t for n in nodes for t in n.outputs if t >= 0}
    held = {t.index for t in plan.tensors if host_only(t)} | made
    read = {t for n in plan.nodes if not host_task(n) for t in n.inputs if t >= 0}
    staged, at = {}, 0
    for t in sorted(made & read):
        spec = plan.tensors[t]
        if host_only(spec):
            reader = next(n for n in plan.nodes if t in n.inputs and not host_task(n))
            raise GEError(f"runtime_v1 cannot run {reader.op_type} node '{reader.name}': it reads '{spec.name}' "
                          f"({spec.value_kind} {spec.dtype}{list(spec.shape)}), which only a host op can; use "
                          "runtime='v2' (or 'auto', which picks it)")
        staged[t] = at
        at = align_up(at + spec.nbytes)
    return HostValues(frozenset(held), staged, at)


class HostTask:
    """A host node's step in a stream's program (module doc); `bind(instance)` gives the call run per run."""
    sig = None   # never a native row: the program calls it, as a fallback task
    reason = "host op"

    def __init__(self, node: PlanNode, plan: Plan, held: frozenset, locate, staged: dict, slot: int, executor_of):
        self.node, self.plan = node, plan
        self.host = node.kernel.host
        # per input: Held, ArenaView, or the value itself (a constant; None for an omitted input)
        self.inputs = []
        for t in node.inputs:
            if t < 0:
                self.inputs.append(None)
            elif t in plan.constants:
                self.inputs.append(plan.constants[t])
            elif t in held:
                self.inputs.append(Held(t))
            else:
                spec = plan.tensors[t]
                self.inputs.append(ArenaView(*locate(t), spec.dtype, tuple(spec.shape)))
        self.stage = tuple((k, t, staged[t]) for k, t in enumerate(node.outputs) if t in staged)
        self.slot = slot
        body = sunk_plan(node)
        self.body = executor_of(body) if body is not None else None
        self.call = HostCall(node.op_type, node.name, node.attrs, node.opset,
                             tuple(plan.tensors[t].dtype if t >= 0 else None for t in node.outputs),
                             {"f": self._run_body} if self.body is not None else {})

    def _run_body(self, args):
        plan = self.body.plan
        return self.body.run({t: np.ascontiguousarray(a) for t, a in zip(plan.inputs, args)})

    def bind(self, inst):
        return lambda: self.run(inst)

    def run(self, inst) -> None:
        values, keep, args, views = inst.values, inst.keep, [], []
        for x in self.inputs:
            kind = type(x)
            if kind is Held:
                args.append(values[x.tensor])
            elif kind is ArenaView:
                slot, off, dtype, shape = x
                src = keep[slot].reshape(-1).view(np.uint8) if slot in keep else inst.seg[slot]
                nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                a = src[off:off + nbytes].view(dtype).reshape(shape)
                views.append(a)
                args.append(a)
            else:   # a constant, or None
                args.append(x)
        outs = self.host(self.call, args)
        node, tensors = self.node, self.plan.tensors
        if len(outs) != len(node.outputs):
            raise GEError(f"{node.op_type} node '{node.name}' gave {len(outs)} outputs, the plan has "
                          f"{len(node.outputs)}")
        for t, v in zip(node.outputs, outs):
            if t < 0:
                continue
            v = check_value(tensors[t], v, f"output '{tensors[t].name}'")
            if isinstance(v, np.ndarray) and any(np.may_share_memory(v, a) for a in views):
                v = v.copy()   # the arena's bytes are reused by later tasks
            values[t] = v
        for k, t, off in self.stage:
            v = values[t]
            dst = inst.seg[self.slot][off:off + v.nbytes].view(v.dtype)
            np.copyto(dst, v.reshape(-1))

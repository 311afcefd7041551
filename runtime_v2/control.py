"""Host-driven nodes: control flow (If, Loop, Scan) and the sequence / optional ops.

A `HostNode` stands where a dynamic step would (the executor calls `node(bufs, shapes, spans, alloc,
core)`): it reads its inputs from the buffer table (tensors as arrays in their run-time shapes, sequences
as lists, optionals as None or their element), calls the op's host function (ge.kernels.control /
sequence), and writes its outputs back, checked against the plan (kind, dtype, static dims).
Each body runs on an `Executor` of its own plan, loaded once with the outer executor and sharing its
device: its own lowered steps, memory plan and kernels. A body run feeds the body's formal inputs and then
the captured outer values; each fed array's shape must agree with the body plan's static dims (a body
compiled for one shape never runs on another: the compiler made carried shapes symbolic where they move).
"""
from __future__ import annotations

import numpy as np

from ge.errors import ShapeError
from ge.kernels.control import HostCall, check_value as _check


class HostNode:
    __slots__ = ("node", "plan", "call", "host", "n_formal", "bodies")

    def __init__(self, plan, step, executor_of):
        self.node, self.plan = step.node, plan
        node = self.node
        self.host = node.kernel.host
        n_cap = sum(n for _, _, n in node.bodies)
        self.n_formal = len(node.inputs) - n_cap
        # per body: (attribute, executor, its captured tensors in the outer plan)
        self.bodies, at = [], self.n_formal
        for attr, body_plan, n in node.bodies:
            self.bodies.append((attr, executor_of(body_plan), node.inputs[at:at + n]))
            at += n
        self.call = None

    def __call__(self, bufs, shapes, spans, alloc, core=None) -> None:
        node = self.node
        values = [_value(bufs, shapes, t) for t in node.inputs]
        bodies = {attr: self._runner(attr, ex, [_value(bufs, shapes, t) for t in caps])
                  for attr, ex, caps in self.bodies}
        tensors = self.plan.tensors
        call = HostCall(node.op_type, node.name, node.attrs, node.opset,
                        tuple(tensors[t].dtype for t in node.outputs), bodies)
        outs = self.host(call, values[:self.n_formal])
        if len(outs) != len(node.outputs):
            raise ShapeError(f"{node.op_type} node '{node.name}' gave {len(outs)} outputs, the plan has "
                             f"{len(node.outputs)}")
        for t, v in zip(node.outputs, outs):
            v = _check(tensors[t], v, f"output '{tensors[t].name}'")
            if isinstance(v, np.ndarray):
                bufs[t], shapes[t] = v.reshape(-1), v.shape
            else:
                bufs[t], shapes[t] = v, None

    def _runner(self, attr, ex, captured):
        plan = ex.plan
        n_formal = len(plan.inputs) - len(captured)

        def run(values):
            if len(values) != n_formal:
                raise ShapeError(f"{self.node.op_type} node '{self.node.name}': its {attr} takes {n_formal} "
                                 f"values, given {len(values)}")
            feeds = {}
            for t, v in zip(plan.inputs, [*values, *captured]):
                spec = plan.tensors[t]
                v = _check(spec, v, f"{attr} input '{spec.name}'")
                # (not np.ascontiguousarray: it makes a 0-d array 1-d)
                feeds[t] = v.copy() if isinstance(v, np.ndarray) and not v.flags.c_contiguous else v
            return ex.run_body(feeds)
        return run


def _value(bufs, shapes, t):
    if t < 0:
        return None
    v = bufs[t]
    return v.reshape(shapes[t]) if isinstance(v, np.ndarray) and shapes[t] is not None else v

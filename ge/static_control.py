"""Which control nodes runtime_v1's task sink runs from its tables (runtime_v1/labels.py, GE's label tasks).

A static If, Loop or Scan does: every value a tensor of static shape, each body value the same dtype and shape
as the outer value it stands for (the label tasks read and write them in place: a mismatch would overrun a
buffer, so an offline plan is held to it too), bodies that are static plans (their control nodes
recursively), Scan's axes 0 (its rows contiguous). Such a node's outputs get the static memory plan like any
task's (ge.memory.lifetime); runtime_v2 runs it host-driven; `runs_on_v1` is what runtime="auto" asks.
"""
from __future__ import annotations

import numpy as np

from .plan import Plan, PlanNode

def static_control_reason(plan: Plan, node: PlanNode) -> str:
    """Why the task sink cannot run control node `node` from its tables ("" when it can)."""
    what = f"{node.op_type} node '{node.name}'"
    if node.op_type not in ("If", "Loop", "Scan") or not node.bodies:
        return f"{what} runs host-driven (sequences and optionals have no label tasks)"
    if node.op_type == "Scan" and node.opset < 9:
        return f"{what}: Scan-8 (a batch axis, sequence lengths) runs host-driven"
    outer = [plan.tensors[t] for t in (*node.inputs, *node.outputs) if t >= 0]
    bad = next((t for t in outer if t.value_kind != "tensor" or not t.is_static), None)
    if bad is not None:
        return f"{what}: value '{bad.name}' is a {bad.value_kind} of shape {list(bad.shape)}, not a static tensor"
    at = len(node.inputs) - sum(c for _, _, c in node.bodies)
    for attr, body, n_cap in node.bodies:
        if body.memory is None:
            return f"{what}: its {attr} has no static memory plan"
        bad = next((t for t in body.tensors if t.value_kind != "tensor" or not t.is_static), None)
        if bad is not None:
            return f"{what}: value '{bad.name}' of its {attr} is not a static tensor"
        pairs = _pairs(plan, node, body, node.inputs[at:at + n_cap])
        at += n_cap
        if isinstance(pairs, str):
            return f"{what}: {pairs}"
        for name, got, allowed in pairs:
            if got not in allowed:
                return f"{what}: its {attr}'s {name} is {got}, the node's {allowed[0]}"
        for n in body.nodes:
            if n.bodies:
                why = static_control_reason(body, n)
                if why:
                    return why
            elif n.is_dynamic:
                return f"{what}: {n.op_type} node '{n.name}' of its {attr} has shapes known only at run time"
    return ""


def _spec(p, t):
    return None if t < 0 else (p.tensors[t].dtype, tuple(p.tensors[t].shape))


def _scalar(dt):
    return [(np.dtype(dt), ()), (np.dtype(dt), (1,))]


def _pairs(plan, node, body, caps):
    """[(what, the body's (dtype, shape), the allowed ones)] for every value the node and `body` share, or why
    they cannot share them."""
    ins, outs = list(body.inputs), list(body.outputs)
    n_cap = len(caps)
    pairs = [(f"captured input {k}", _spec(body, t), [_spec(plan, c)])
             for k, (t, c) in enumerate(zip(ins[len(ins) - n_cap:], caps))]
    formal = ins[:len(ins) - n_cap]
    if node.op_type == "If":
        if len(outs) != len(node.outputs):
            return f"a branch has {len(outs)} outputs, the node {len(node.outputs)}"
        pairs.append(("condition", _spec(plan, node.inputs[0]), _scalar(np.bool_)))
        return pairs + [(f"output {k}", _spec(body, o), [_spec(plan, t)])
                        for k, (o, t) in enumerate(zip(outs, node.outputs)) if t >= 0]
    if node.op_type == "Loop":
        lead, n = 2, len(formal) - 2          # (iteration, condition, carried...) -> (condition, carried, scans)
        if n < 0 or len(outs) < 1 + n or len(node.outputs) != len(outs) - 1 or len(node.inputs) < 2 + n:
            return "its body's inputs and outputs do not match the node's"
        pairs += [("iteration number", _spec(body, ins[0]), _scalar(np.int64)),
                  ("condition", _spec(body, ins[1]), _scalar(np.bool_)),
                  ("condition out", _spec(body, outs[0]), _scalar(np.bool_))]
        pairs += [(name, _spec(plan, t), _scalar(dt)) for name, t, dt in (
            ("trip count", node.inputs[0], np.int64), ("condition input", node.inputs[1], np.bool_)) if t >= 0]
        outs = outs[1:]
    else:                                     # Scan: (states..., rows of the scan inputs) -> (states, scan rows)
        m = int(node.attrs.get("num_scan_inputs", 0))
        lead, n = 0, len(formal) - m
        if n < 0 or len(outs) < n or len(node.outputs) != len(outs) or len(node.inputs) != len(formal) + n_cap:
            return "its body's inputs and outputs do not match the node's"
        if any(int(a) != 0 for key in ("scan_input_axes", "scan_output_axes") for a in node.attrs.get(key) or ()):
            return "a scan axis other than 0 runs host-driven (its rows are not contiguous)"
        lengths = {plan.tensors[t].shape[0] if plan.tensors[t].shape else None for t in node.inputs[n:n + m]}
        rows = {plan.tensors[t].shape[0] for t in node.outputs[n:] if t >= 0 and plan.tensors[t].shape}
        if len(lengths) != 1 or None in lengths or not rows <= lengths:
            return f"its scan inputs and outputs disagree in length ({sorted(map(str, lengths | rows))})"
        for j, (t, b) in enumerate(zip(node.inputs[n:n + m], formal[n:])):
            dt, shape = _spec(plan, t)
            pairs.append((f"scan input {j} row", _spec(body, b), [(dt, shape[1:])]))
    for k in range(n):
        want = [_spec(plan, node.inputs[lead + k])]
        pairs += [(f"carried value {k}", _spec(body, formal[lead + k]), want),
                  (f"carried value {k} out", _spec(body, outs[k]), want)]
        if node.outputs[k] >= 0:
            pairs.append((f"output {k}", _spec(plan, node.outputs[k]), want))
    for j, (o, t) in enumerate(zip(outs[n:], node.outputs[n:])):
        if t >= 0:
            dt, shape = _spec(plan, t)
            pairs.append((f"scan output {j} row", _spec(body, o), [(dt, shape[1:])]))
    return pairs


def runs_on_v1(plan: Plan) -> bool:
    """The task sink can run every node: static, or static control flow."""
    return all(not n.is_dynamic or (n.bodies and not static_control_reason(plan, n)) for n in plan.nodes)

"""Bodies of control nodes (If, Loop, Scan) for the compiler: each compiled once into a plan of its own.

Step 1: copy the body (the compiler may compile a graph more than once; the IR body stays as imported).
Step 2: type its inputs from the node: captures take their outer values' types as the passes left them;
        Loop's iteration number and condition are i64[] and b8[]; carried values (Loop, Scan states) start
        as the node's initial values; Scan's slices are the scan inputs without their scan axis;
        SequenceMap's are its sequences' elements (shape unknown) or its tensors.
Step 3: a carried value whose shape the body changes (a growing sequence of concatenations) gets
        symbolic dims where the body's output disagrees with its input, found by inferring a trial copy
        (at most 3 rounds, then rank unknown): the body is compiled once for every iteration's shape.
        When an input's type differs from what the model declared, the frontend's inferred shapes inside
        the body are dropped (they followed the declaration), and ge's inference starts again.
Step 4: captures become the body plan's last inputs; compile (passes, order, kernels, streams, memory).
"""
from __future__ import annotations

import copy

from .ir import Value
from .kernels import sequence
from .passes.infer_shapes import infer_shapes

MAX_ROUNDS = 3


def host_kernel(node, kernel):
    """The node's kernel (sequence.host_kernel on its values' kinds)."""
    return sequence.host_kernel(node.op_type, node.name,
                                [v.kind for v in (*node.inputs, *node.outputs) if v is not None], kernel)


def compile_bodies(node, compile_fn) -> tuple:
    """((attribute, Plan, number of captured inputs), ...) for each body of the node."""
    out = []
    captured = iter(node.inputs[len(node.inputs) - node.n_captured:])
    for attr, body in node.bodies.items():
        b = copy.deepcopy(body)                                        # Step 1
        stale = False
        for inner in b.captures:                                       # Step 2
            stale |= _retype(inner, next(captured))
        stale |= _formal_types(node, b)
        if stale:
            _forget_shapes(b)
        _generalize(node, b)                                           # Step 3
        n = len(b.captures)
        b.inputs, b.captures = b.inputs + b.captures, []               # Step 4
        out.append((attr, compile_fn(b), n))
    return tuple(out)


def _retype(inner, dtype_or_value, shape=None, kind=None) -> bool:
    """Give `inner` a type (another value's, or dtype/shape/kind); True when it changed."""
    if isinstance(dtype_or_value, Value):
        v = dtype_or_value
        dtype, shape, kind = v.dtype, v.shape, v.kind
    else:
        dtype = dtype_or_value
    new = (dtype if dtype is not None else inner.dtype, shape, kind or inner.kind)
    old = (inner.dtype, inner.shape, inner.kind)
    inner.dtype, inner.shape, inner.kind = new
    return old != new


def _formal_types(node, b) -> bool:
    import numpy as np
    formal = node.formal_inputs
    changed = False
    if node.op_type == "Loop":
        changed |= _retype(b.inputs[0], np.dtype(np.int64), (), "tensor")
        changed |= _retype(b.inputs[1], np.dtype(np.bool_), (), "tensor")
        for inner, v in zip(b.inputs[2:], formal[2:]):
            changed |= _retype(inner, v)
    elif node.op_type == "SequenceMap":   # a sequence's element: its dtype, shape unknown
        for inner, v in zip(b.inputs, formal):
            changed |= _retype(inner, v.dtype, v.shape if v.is_tensor else None, "tensor")
    elif node.op_type == "Scan":
        m = int(node.attrs.get("num_scan_inputs", 0))
        lead = 1 if len(formal) > len(b.inputs) else 0        # Scan-8: sequence_lens, a batch axis
        states, xs = formal[lead:len(formal) - m], formal[len(formal) - m:]
        axes = node.attrs.get("scan_input_axes") or [0] * m
        for inner, v in zip(b.inputs, states):
            changed |= _retype(inner, v.dtype, None if v.shape is None else v.shape[lead:], v.kind)
        for inner, v, ax in zip(b.inputs[len(states):], xs, axes):
            shape = v.shape
            if shape is not None:
                shape = shape[1:] if lead else shape
                ax = int(ax) % len(shape) if shape else 0
                shape = shape[:ax] + shape[ax + 1:]
            changed |= _retype(inner, v.dtype, shape, v.kind)
    return changed


def _forget_shapes(b) -> None:
    keep = {id(v) for v in (*b.inputs, *b.captures)}
    for v in b.values.values():
        if id(v) not in keep and not v.is_const and v.is_tensor:
            v.shape = None


def _carried(node, b) -> list[tuple[int, int]]:
    """(body input, body output) pairs of the values a loop carries from one iteration to the next."""
    if node.op_type == "Loop":
        return [(2 + k, 1 + k) for k in range(len(b.inputs) - 2)]
    if node.op_type == "Scan":
        m = int(node.attrs.get("num_scan_inputs", 0))
        return [(k, k) for k in range(len(b.inputs) - m)]
    return []


def _generalize(node, b) -> None:
    pairs = _carried(node, b)
    for _ in range(MAX_ROUNDS):
        trial = copy.deepcopy(b)
        infer_shapes(trial)
        changed = False
        for i, o in pairs:
            vin, vout = b.inputs[i], trial.outputs[o]
            if not vin.is_tensor or vin.shape is None or vout.shape == vin.shape:
                continue
            if vout.shape is None or len(vout.shape) != len(vin.shape):
                vin.shape = None
            else:
                vin.shape = tuple(d if d == e else f"{node.name}.{i}.{j}"
                                  for j, (d, e) in enumerate(zip(vin.shape, vout.shape)))
            changed = True
        if not changed:
            return
        _forget_shapes(b)
    for i, _ in pairs:  # still moving: rank unknown
        b.inputs[i].shape = None if b.inputs[i].is_tensor else b.inputs[i].shape

"""recognize_activations: the activations exporters spell out in primitive ops become one node each.

    x * 0.5 * (1 + Erf(x / sqrt 2))   (any order of the two Muls; x * (1/sqrt 2) for the Div)
                                      -> ge::Gelu(x)             (torch's and Keras's exact GELU)
    x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))   (x^3 as Pow(x, 3) or x * x * x)
                                      -> ge::Gelu[approximate='tanh'](x)   (GPT-2's gelu_new)
    x * Sigmoid(x)                    -> ge::Silu(x)             (SiLU / Swish: EfficientNet, YOLO)

One node reads and writes the tensor once instead of four or five times (ViT-B's MLP: 197 x 3072 floats per
pass), and fuse_activation then folds it into the producing Conv / MatMul's epilogue. The ge domain keeps
models of any opset (ONNX's own Gelu exists only from opset 20).

Algorithm, one sweep in order:
  Step 1: match from the distinctive node (Erf, Tanh, Sigmoid) outwards; every inner value has exactly the
          pattern's readers and is not a graph output; the constants are scalars within float32 round-off
          of 1/sqrt 2 (or sqrt 2), sqrt(2/pi), 0.044715, 3, 1 and 0.5.
  Step 2: replace the matched nodes by one node named after the last, keeping its output name.
Limits: float tensors with static or symbolic shapes alike; a Tanh whose argument is anything else stays.
Invariant: outputs change by float rounding only (the fused forms compute the same functions).
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels.registry import is_registered
from .pattern import const_of, is_float, only_reader, replace_pattern


def _scalar(v) -> float | None:
    c = const_of(v)
    return float(c.reshape(())) if c is not None and c.size == 1 else None


def _near(v, want: float) -> bool:
    got = _scalar(v)
    return got is not None and abs(got - want) <= 1e-6 * abs(want)


def _other(node, v):
    """The input of a two-input node that is not `v` (None if `v` is not one of them)."""
    a, b = node.inputs
    return b if a is v else a if b is v else None


def _single_reader(graph, v, op_type: str):
    """The one node reading `v` when it is a two-input `op_type` and `v` is no graph output."""
    if v is None or len(v.users) != 1 or v in graph.outputs:
        return None
    u = v.users[0]
    return u if u.op_type == op_type and u.domain == "" and len(u.inputs) == 2 else None


def _match_gelu(graph, erf):
    """The nodes of x * 0.5 * (1 + erf(x / sqrt 2)) around `erf`, and x; else None."""
    scale = erf.inputs[0].producer
    if scale is None or scale.domain != "" or len(scale.inputs) != 2 or not only_reader(graph, scale.outputs[0], erf):
        return None
    x, c = scale.inputs
    if not ((scale.op_type == "Div" and _near(c, math.sqrt(2))) or
            (scale.op_type == "Mul" and _near(c, math.sqrt(0.5)))):
        return None
    tail = _match_tail(graph, erf, x)
    return None if tail is None else (x, [scale, erf] + tail)


def _scalar_mul(graph, v, reader, want: float):
    """(the Mul making `v` for `reader` alone as operand * a scalar near `want`, the operand); else None."""
    m = v.producer
    if m is None or m.op_type != "Mul" or m.domain != "" or len(m.inputs) != 2 or not only_reader(graph, v, reader):
        return None
    for a, c in (m.inputs, m.inputs[::-1]):
        if _near(c, want):
            return m, a
    return None


def _match_cube(graph, v, reader, x):
    """The nodes making x^3 as `v` for `reader` alone: Pow(x, 3) or (x * x) * x; else None."""
    p = v.producer
    if p is None or p.domain != "" or not only_reader(graph, v, reader) or len(p.inputs) != 2:
        return None
    if p.op_type == "Pow" and p.inputs[0] is x and _near(p.inputs[1], 3.0):
        return [p]
    if p.op_type == "Mul" and x in p.inputs:
        sq = _other(p, x).producer
        if sq is not None and sq.op_type == "Mul" and sq.domain == "" and list(sq.inputs) == [x, x] and \
                only_reader(graph, sq.outputs[0], p):
            return [sq, p]
    return None


def _match_gelu_tanh(graph, tanh):
    """The nodes of x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) around `tanh`, and x; else None."""
    outer = _scalar_mul(graph, tanh.inputs[0], tanh, math.sqrt(2 / math.pi))
    if outer is None:
        return None
    inner = outer[1].producer
    if inner is None or inner.op_type != "Add" or inner.domain != "" or len(inner.inputs) != 2 or \
            not only_reader(graph, outer[1], outer[0]):
        return None
    for x, w in (inner.inputs, inner.inputs[::-1]):
        cubic = _scalar_mul(graph, w, inner, 0.044715)
        cube = None if cubic is None else _match_cube(graph, cubic[1], cubic[0], x)
        if cube is not None:
            tail = _match_tail(graph, tanh, x)
            return None if tail is None else (x, cube + [cubic[0], inner, outer[0], tanh] + tail)
    return None


def _match_tail(graph, f, x):
    """The nodes of x * 0.5 * (1 + f) after f (Erf or Tanh): Add 1, then the two Muls in any order."""
    add = _single_reader(graph, f.outputs[0], "Add")
    if add is None or not _near(_other(add, f.outputs[0]), 1.0):
        return None
    m1 = _single_reader(graph, add.outputs[0], "Mul")
    if m1 is None:
        return None
    f = _other(m1, add.outputs[0])
    if f is x:   # x * (1 + erf) then * 0.5
        m2 = _single_reader(graph, m1.outputs[0], "Mul")
        return [add, m1, m2] if m2 is not None and _near(_other(m2, m1.outputs[0]), 0.5) else None
    if _near(f, 0.5):   # (1 + erf) * 0.5, then * x
        m2 = _single_reader(graph, m1.outputs[0], "Mul")
        return [add, m1, m2] if m2 is not None and _other(m2, m1.outputs[0]) is x else None
    half = f.producer   # (x * 0.5) * (1 + erf)
    if half is not None and half.op_type == "Mul" and half.domain == "" and len(half.inputs) == 2 and \
            only_reader(graph, f, m1) and x in half.inputs and _near(_other(half, x), 0.5):
        return [add, half, m1]
    return None


def _match_silu(graph, sig):
    x = sig.inputs[0]
    mul = _single_reader(graph, sig.outputs[0], "Mul")
    return (x, [sig, mul]) if mul is not None and _other(mul, sig.outputs[0]) is x else None


_MATCHERS = {"Erf": ("Gelu", _match_gelu, {}), "Tanh": ("Gelu", _match_gelu_tanh, {"approximate": "tanh"}),
             "Sigmoid": ("Silu", _match_silu, {})}


def recognize_activations(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        if node.domain != "" or node.op_type not in _MATCHERS or node not in graph.nodes:
            continue
        op, match, attrs = _MATCHERS[node.op_type]
        # Step 1: match
        found = match(graph, node) if is_float(node.outputs[0]) and is_registered(op, "ge") else None
        if found is None:
            continue
        x, nodes = found
        if x.dtype != nodes[-1].outputs[0].dtype or not np.issubdtype(x.dtype, np.floating):
            continue
        # Step 2: one node
        graph.opsets.setdefault("ge", 1)
        last = max(nodes, key=graph.nodes.index)
        replace_pattern(graph, nodes, op, [x], attrs, "ge", name=last.name)
        changed = True
    return changed

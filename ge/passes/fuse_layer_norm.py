"""fuse_layer_norm: LayerNormalization as exporters before opset 17 write it out becomes one node.

    m = ReduceMean(x, -1); d = Sub(x, m); v = ReduceMean(Pow(d, 2) | Mul(d, d), -1)
    n = Div(d, Sqrt(Add(v, eps))) [; Mul(n, gamma)] [; Add(., beta)]
        -> LayerNormalization[axis=-1, epsilon=eps](x, gamma | ones, beta)

(torch.onnx at opsets 11-16, tf2onnx's Keras LayerNormalization; opset 17 exports emit the op itself.) One
node reads x twice (norm.py's two-pass row) instead of nine kernels passing the row back and forth; then
fuse_skip_layer_norm can take a residual Add before it. onnxruntime's LayerNormFusion is the anchor.

Algorithm, one sweep in order:
  Step 1: match from each Sqrt outwards: both ReduceMeans over the last axis only (axes attribute or a
          constant input, keepdims), the square by Pow(d, 2) or Mul(d, d) of the same Sub, the epsilon a
          positive scalar, gamma / beta constant rows of the last dim's size (static); every inner value
          read only inside the pattern and no graph output.
  Step 2: replace the matched nodes by one LayerNormalization named after the last, keeping its output name.
Limits: float x of known rank with a static last dim; a mean over several axes stays.
Invariant: outputs change by float rounding only (norm.py's moments are summed in float64).
"""
from __future__ import annotations

import numpy as np

from .pattern import is_float, only_reader, producer, replace_pattern


def _scalar(v) -> float | None:
    c = None if v is None else v.const
    return float(c.reshape(())) if c is not None and c.size == 1 else None


def _last_axis_mean(node, rank) -> bool:
    if node.attrs.get("keepdims", 1) != 1:
        return False
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1] is not None:
        axes = None if node.inputs[1].const is None else node.inputs[1].const.tolist()
    return axes is not None and len(axes) == 1 and axes[0] in (-1, rank - 1)


def _single(graph, v, op):
    """The one reader of `v` when it is an `op` (default domain) and `v` is no graph output."""
    if len(v.users) != 1 or v in graph.outputs:
        return None
    u = v.users[0]
    return u if u.op_type == op and u.domain == "" else None


def _row(v, n, dtype) -> bool:
    c = None if v is None else v.const
    return c is not None and c.dtype == dtype and c.size == n and (c.ndim == 1 or c.shape[-1] == n)


def _match(graph, sqrt):
    add_eps = producer(sqrt.inputs[0], ("Add",))
    if add_eps is None or not only_reader(graph, sqrt.inputs[0], sqrt):
        return None
    var_v, eps_v = add_eps.inputs if _scalar(add_eps.inputs[1]) is not None else add_eps.inputs[::-1]
    eps = _scalar(eps_v)
    var = producer(var_v, ("ReduceMean",))
    if eps is None or eps <= 0 or var is None or not only_reader(graph, var_v, add_eps):
        return None
    sq = producer(var.inputs[0], ("Pow", "Mul"))
    if sq is None or not only_reader(graph, var.inputs[0], var):
        return None
    d = sq.inputs[0]
    if not ((sq.op_type == "Pow" and _scalar(sq.inputs[1]) == 2.0) or (sq.op_type == "Mul" and sq.inputs[1] is d)):
        return None
    sub = producer(d, ("Sub",))
    div = _single(graph, sqrt.outputs[0], "Div")
    if sub is None or div is None or div.inputs[0] is not d or d in graph.outputs:
        return None
    if {id(u) for u in d.users} != {id(sq), id(div)} or len(d.users) != (3 if sq.op_type == "Mul" else 2):
        return None
    x, mean_v = sub.inputs
    mean = producer(mean_v, ("ReduceMean",))
    if mean is None or mean.inputs[0] is not x or not only_reader(graph, mean_v, sub):
        return None
    if not is_float(x) or x.shape is None or not x.shape or not isinstance(x.shape[-1], int):
        return None
    rank, n = len(x.shape), x.shape[-1]
    if not (_last_axis_mean(mean, rank) and _last_axis_mean(var, rank)):
        return None
    nodes, out, gamma, beta = [mean, sub, sq, var, add_eps, sqrt, div], div, None, None
    mul = _single(graph, div.outputs[0], "Mul")
    if mul is not None:
        g = mul.inputs[1] if mul.inputs[0] is div.outputs[0] else mul.inputs[0]
        if _row(g, n, x.dtype):
            nodes, out, gamma = nodes + [mul], mul, g
    add = _single(graph, out.outputs[0], "Add")
    if add is not None:
        b = add.inputs[1] if add.inputs[0] is out.outputs[0] else add.inputs[0]
        if _row(b, n, x.dtype):
            nodes, out, beta = nodes + [add], add, b
    return x, gamma, beta, eps, nodes, out


def fuse_layer_norm(graph) -> bool:
    changed = False
    for sqrt in list(graph.nodes):
        if sqrt.op_type != "Sqrt" or sqrt.domain != "" or sqrt not in graph.nodes:
            continue
        # Step 1: match
        found = _match(graph, sqrt)
        if found is None:
            continue
        x, gamma, beta, eps, nodes, out = found
        # Step 2: one node
        n = x.shape[-1]
        if gamma is None:
            gamma = graph.add_const(f"{out.name}_gamma", np.ones(n, x.dtype))
        inputs = [x, gamma] + ([beta] if beta is not None else [])
        replace_pattern(graph, nodes, "LayerNormalization", inputs, {"axis": -1, "epsilon": eps}, name=out.name)
        changed = True
    return changed

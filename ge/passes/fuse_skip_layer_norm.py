"""fuse_skip_layer_norm: a residual Add feeding a LayerNormalization becomes one ge::SkipLayerNormalization.

    s = Add(a, b); y = LayerNormalization[axis=-1](s, gamma, beta)
        -> y = ge::SkipLayerNormalization(a, b, gamma, beta)            (s read by the LayerNorm alone: BERT)
        -> y, s = ge::SkipLayerNormalization(a, b, gamma, beta)         (s read again later: GPT-2's residual)

One pass over the rows instead of three (the Add writes s, the LayerNorm reads it twice): norm.py's
skip_layer_norm computes the sum into y, its moments, then normalizes in place, with the operations of Add
then LayerNormalization, so the bits are the same. onnxruntime's SkipLayerNormalization (its transformer
optimizer) and GE's AddLayerNorm fusion are the anchors.

Algorithm, one sweep in order:
  Step 1: match a LayerNormalization over the last axis with one output, gamma and beta constant, whose
          input is a two-input float Add; the operands' last dims are the normalized size (or symbolic),
          their ranks equal, and each leading pair of dims equal, both symbolic, or a leading 1 (the kernel broadcasts
          the smaller operand over leading axes only: BERT's positions [1, seq, hidden]); the sum's other
          readers (if any) all come after the LayerNorm.
  Step 2: replace Add and LayerNorm by the fused node, which keeps the LayerNorm's output name (and the
          Add's, when the sum is still read).
Limits: two symbolic dims that turn out to broadcast any other way ([batch, 1, hidden] + [batch, seq,
hidden] with the 1 symbolic, or a symbolic last dim that is 1) are refused when the plan binds (an error naming the node), never computed
wrong; LayerNormalization's Mean / InvStdDev outputs keep the node unfused.
Invariant: outputs are bitwise unchanged.
"""
from __future__ import annotations

from ..kernels.registry import is_registered
from .pattern import is_float, producer, replace_pattern


def _leading_ok(a, b) -> bool:
    """The shapes can only add as equal shapes or with one side broadcast over leading axes."""
    if a is None or b is None or len(a) != len(b) or not a:
        return False
    ones_a = ones_b = True   # still inside a prefix of 1s
    for da, db in zip(a[:-1], b[:-1]):
        ones_a, ones_b = ones_a and da == 1, ones_b and db == 1
        if da == db or (isinstance(da, str) and isinstance(db, str)) or ones_a or ones_b:
            continue
        return False
    return a[-1] == b[-1] or isinstance(a[-1], str) or isinstance(b[-1], str)


def _match(graph, ln):
    if len(ln.inputs) != 3 or len(ln.outputs) != 1 or ln.outputs[0].users == [] and ln.outputs[0] not in graph.outputs:
        return None
    x, gamma, beta = ln.inputs
    if gamma is None or beta is None or gamma.const is None or beta.const is None or x is None or x.shape is None:
        return None
    if ln.attrs.get("axis", -1) not in (-1, len(x.shape) - 1) or not is_float(x):
        return None
    add = producer(x, ("Add",))
    if add is None or len(add.inputs) != 2 or None in add.inputs or x in graph.inputs:
        return None
    a, b = add.inputs
    if not (a.dtype == b.dtype == x.dtype and _leading_ok(a.shape, b.shape)):
        return None
    n = gamma.const.size
    if any(isinstance(d, int) and d != n for d in (a.shape[-1], b.shape[-1])) or beta.const.size != n:
        return None
    if gamma.const.size != n or beta.const.size != n or gamma.const.dtype != x.dtype or beta.const.dtype != x.dtype:
        return None
    at = graph.nodes.index(ln)
    others = [u for u in x.users if u is not ln]
    if any(graph.nodes.index(u) < at for u in others) or ln.inputs.count(x) != 1:
        return None
    return add, bool(others) or x in graph.outputs


def fuse_skip_layer_norm(graph) -> bool:
    if not is_registered("SkipLayerNormalization", "ge"):
        return False
    changed = False
    for ln in list(graph.nodes):
        if ln.op_type != "LayerNormalization" or ln.domain != "" or ln not in graph.nodes:
            continue
        # Step 1: match
        found = _match(graph, ln)
        if found is None:
            continue
        add, keep_sum = found
        # Step 2: one node
        graph.opsets.setdefault("ge", 1)
        results = [ln.outputs[0]] + ([add.outputs[0]] if keep_sum else [])
        replace_pattern(graph, [add, ln], "SkipLayerNormalization", [*add.inputs, ln.inputs[1], ln.inputs[2]],
                        {"epsilon": float(ln.attrs.get("epsilon", 1e-5))}, "ge", name=ln.name, results=results)
        changed = True
    return changed

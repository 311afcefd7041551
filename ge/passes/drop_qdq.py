"""drop_qdq: a MaxPool between a DequantizeLinear and a QuantizeLinear of the same scale and zero point
runs on the 8-bit values (onnxruntime's DropQDQNodesRules).

    DQ(q, s, zp) -> MaxPool -> Q(., s, zp)   ->   MaxPool(q)

onnxruntime's quantizer gives MaxPool its input's quantization parameters (it only selects values), so a
QDQ model keeps a float MaxPool between the pair: a dequantized copy, a float pool and a requantization,
at 4 bytes an element. With s > 0 dequantization is increasing, so the max commutes with it, and
Q(DQ(v)) = v: the int8 pool gives the same bits. Padding is the type's minimum instead of -inf, which a
window never picks over a real value either.

Algorithm, one sweep over the QuantizeLinear nodes:
  Step 1: match Q (per tensor, constant positive scale) <- MaxPool (one output, read only by the Q) <- DQ
          of an 8-bit value with the same scale and zero point (equal constants, or the same values).
  Step 2: replace MaxPool + Q by a MaxPool of the DQ's input under the Q's output name; the DQ falls
          unused when nothing else reads it (eliminate_dead_code).
Limits: MaxPool only (the op QDQ SqueezeNet keeps in float; Reshape, Transpose and friends already move
bits); a Concat between DQs of different scales needs a requantizing kernel and stays float.
Runs after fuse_qdq (whose Q it must not take) and before fold_constants.
"""
from __future__ import annotations

import numpy as np

from .pattern import only_reader, producer, replace_pattern

_Q8 = (np.dtype(np.uint8), np.dtype(np.int8))


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if a is b:
        return True
    return a.is_const and b.is_const and a.const.dtype == b.const.dtype and a.const.size == 1 \
        and b.const.size == 1 and a.const.reshape(-1)[0] == b.const.reshape(-1)[0]


def _params(n):
    """(scale, zero point) of a per-tensor Q/DQ with a constant positive scale, else None."""
    if n.attrs.get("block_size") or len(n.inputs) < 2:
        return None
    s, zp = n.inputs[1], n.inputs[2] if len(n.inputs) > 2 else None
    if not s.is_const or s.const.size != 1 or not float(s.const.reshape(-1)[0]) > 0:
        return None
    return s, zp


def _drop(graph, qn) -> bool:
    # Step 1: Q <- MaxPool <- DQ, one scale and zero point
    mp = producer(qn.inputs[0], ("MaxPool",))
    if mp is None or len(mp.outputs) != 1 or not only_reader(graph, qn.inputs[0], qn):
        return False
    dq = producer(mp.inputs[0], ("DequantizeLinear",))
    if dq is None or dq.inputs[0].dtype not in _Q8:
        return False
    pq, pd = _params(qn), _params(dq)
    if pq is None or pd is None or not (_same(pq[0], pd[0]) and _same(pq[1], pd[1])):
        return False
    if qn.outputs[0].dtype != dq.inputs[0].dtype:
        return False
    # Step 2: the pool on the 8-bit values, under the Q's name
    replace_pattern(graph, [mp, qn], "MaxPool", [dq.inputs[0]], dict(mp.attrs), name=mp.name)
    return True


def drop_qdq(graph, options=None) -> bool:
    changed = False
    for qn in [n for n in graph.nodes if n.op_type == "QuantizeLinear" and n.domain == ""]:
        if qn in graph.nodes:
            changed |= _drop(graph, qn)
    return changed

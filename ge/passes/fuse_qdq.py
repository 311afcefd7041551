"""fuse_qdq: QDQ-quantized Conv / MatMul run as integer kernels, the way onnxruntime runs QDQ models.

    DQ(xq, xs, xzp) -> Conv(., DQ(wq, ws, wzp), [DQ(bq, xs*ws)]) [-> Relu] -> Q(., ys, yzp)
        -> ge::QLinearConv[..., activation](xq, xs, xzp, wq, ws, wzp, ys, yzp, [bq])
    DQ(aq, as, azp) -> MatMul(., DQ(bq, bs, bzp)) -> Q(., ys, yzp)
        -> QLinearMatMul(aq, as, azp, bq, bs, bzp, ys, yzp)

A QDQ model (onnxruntime.quantization's QuantFormat.QDQ) keeps float ops between DequantizeLinear and
QuantizeLinear pairs; run as written, every Conv computes in float32 on dequantized values and rounds
again. The fused form sums (x - xzp) * (w - wzp) exactly in int32 and requantizes once with the combined
scale xs * ws / ys (gemm_int8.py), as onnxruntime's QLinearConv does. A Relu between Conv and Q is a clamp
at the output zero point: Q(max(y, 0)) = max(Q(y), yzp) exactly, so it becomes the kernel's `activation`.

Algorithm, one sweep over the QuantizeLinear nodes:
  Step 1: match backwards from each Q: its input comes from a Relu (read only by the Q) or directly from
          a Conv / MatMul read only by it (or by that Relu); the op's activation input is a DQ of an
          8-bit value, per tensor; its weight is a DQ of a constant 8-bit value, per tensor or per output
          channel (axis 0 for Conv, per column for MatMul); a Conv's bias is absent or a DQ of a constant
          int32 whose scale is xs * ws (as the quantizer writes it; float-rounding close); the Q is per
          tensor with an 8-bit output.
  Step 2: replace Conv [Relu] Q by one node reading the DQs' inputs; the node keeps the Q's output name.
          An all-zero weight zero point is dropped (absent means 0): the VNNI kernel takes such convs.
          The DQs fall unused when nothing else reads them (eliminate_dead_code removes them).
Runs before fold_constants, which would otherwise fold the weights' DQs into float constants.
    DQ(aq, as, azp) -> Gemm[transB=1](., DQ(wq, ws), [bias]) (a float result: the classifier)
        -> ge::QGemm[weight_shape](aq, as, azp, panels(wq), ws, rowsum(wq), [bias])   (AVX512-VNNI only)
Limits: a Gemm with a Q after it, transposed A or untransposed B, and Add stay in float between their DQs
and Qs (nhwc_int8 runs an Add island on images); scales and zero points that are not constants are fine (the kernels
read them as inputs), but a Conv bias must be a constant.
Invariant: outputs are those of onnxruntime's integer kernels (within one quantization step of the float
form).
"""
from __future__ import annotations

import numpy as np

from ..kernels.conv_vnni import HAS_VNNI, pack_weights, packed_size
from ..kernels.registry import is_registered
from .pattern import only_reader, producer, replace_pattern

_Q8 = (np.dtype(np.uint8), np.dtype(np.int8))


def _dq(graph, v, reader, const: bool = False):
    """(q, scale, zero point) of the DequantizeLinear making `v` (an 8-bit q; a constant one when asked)."""
    p = producer(v, ("DequantizeLinear",))
    if p is None or p.attrs.get("block_size") or len(p.inputs) < 2:
        return None
    q, s = p.inputs[0], p.inputs[1]
    zp = p.inputs[2] if len(p.inputs) > 2 else None
    if q.dtype not in _Q8 or (const and not q.is_const) or s.shape is None:
        return None
    return p, q, s, zp


def _size(v) -> int | None:
    return None if v is None or not v.is_static else int(np.prod(v.shape, dtype=np.int64))


def _per_tensor(d) -> bool:
    return d is not None and _size(d[2]) == 1 and len(d[2].shape) <= 1


def _bias(conv, x, w):
    """The int32 bias of a quantized Conv, None when it has none, False when it cannot be fused."""
    if len(conv.inputs) < 3 or conv.inputs[2] is None:
        return None
    p = producer(conv.inputs[2], ("DequantizeLinear",))
    if p is None or not p.inputs[0].is_const or p.inputs[0].dtype != np.int32 or not p.inputs[1].is_const:
        return False
    zp = p.inputs[2] if len(p.inputs) > 2 else None
    if zp is not None and (not zp.is_const or zp.const.any()):
        return False
    if not (x[2].is_const and w[2].is_const):
        return False
    want = x[2].const.astype(np.float64).reshape(-1) * w[2].const.astype(np.float64).reshape(-1)
    got = p.inputs[1].const.astype(np.float64).reshape(-1)
    if got.size not in (1, want.size) or not np.allclose(got, want, rtol=1e-5, atol=0):
        return False
    return p.inputs[0]


def _fuse(graph, qn) -> bool:
    # Step 1: match backwards from the Q
    if len(qn.inputs) < 3 or qn.inputs[2] is None or qn.inputs[2].dtype not in _Q8 or qn.attrs.get("block_size"):
        return False
    if _size(qn.inputs[1]) != 1:
        return False
    pattern, act, v = [qn], "", qn.inputs[0]
    relu = producer(v, ("Relu",))
    if relu is not None and only_reader(graph, v, qn):
        pattern, act, v = [relu, qn], "Relu", relu.inputs[0]
    op = producer(v, ("Conv", "MatMul"))
    if op is None or not only_reader(graph, v, pattern[0]):
        return False
    x, w = _dq(graph, op.inputs[0], op), _dq(graph, op.inputs[1], op, const=True)
    if not _per_tensor(x) or w is None:
        return False
    ys, yzp = qn.inputs[1], qn.inputs[2]
    if op.op_type == "Conv":
        M = w[1].shape[0]
        if _size(w[2]) not in (1, M) or (_size(w[2]) == M and w[0].attrs.get("axis", 1) != 0):
            return False
        bias = _bias(op, x, w)
        if bias is False:
            return False
        wzp = None if w[3] is not None and w[3].is_const and not w[3].const.any() else w[3]  # 0: absent
        inputs = [x[1], x[2], x[3], w[1], w[2], wzp, ys, yzp] + ([bias] if bias is not None else [])
        new, domain, attrs = "QLinearConv", "ge", {**op.attrs, "activation": act}
    else:
        if act or len(w[1].shape) != 2 or _size(w[2]) not in (1, w[1].shape[1]):
            return False
        if _size(w[2]) > 1 and w[0].attrs.get("axis", 1) not in (1, -1):
            return False
        inputs, new, domain, attrs = [x[1], x[2], x[3], w[1], w[2], w[3], ys, yzp], "QLinearMatMul", "", {}
    if not is_registered(new, domain):
        return False
    # Step 2: one integer node under the Q's output name
    if domain:
        graph.opsets.setdefault(domain, 1)
    replace_pattern(graph, [op] + pattern, new, inputs, attrs, domain, name=op.name)
    return True


def _fuse_gemm(graph, gemm) -> bool:
    """DQ(aq) -> Gemm(., DQ(wq) [N, K] transposed, [bias]) with a float result -> ge::QGemm
    (kernels/matmul_int8.py), its weights packed into conv_vnni's panels here (a constant the folds never touch)."""
    a = gemm.attrs
    if (a.get("transA", 0) or a.get("transB", 0) != 1 or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0
            or not HAS_VNNI or len(gemm.inputs) < 2):
        return False
    x, w = _dq(graph, gemm.inputs[0], gemm), _dq(graph, gemm.inputs[1], gemm, const=True)
    if not _per_tensor(x) or w is None or x[1].shape is None or len(x[1].shape) != 2:
        return False
    wq, ws = w[1], w[2]
    if wq.dtype != np.int8 or len(wq.shape) != 2 or _size(ws) not in (1, wq.shape[0]) or not ws.is_const:
        return False
    if _size(ws) > 1 and w[0].attrs.get("axis", 1) != 0:
        return False
    if w[3] is not None and (not w[3].is_const or w[3].const.any()):
        return False
    bias = gemm.inputs[2] if len(gemm.inputs) > 2 else None
    if bias is not None and (bias.dtype != np.float32 or bias.shape is None or _size(bias) != wq.shape[0]
                             or tuple(bias.shape) not in ((wq.shape[0],), (1, wq.shape[0]))):
        return False
    N, K = wq.shape
    panels, rowsum = np.empty(packed_size(N, K, 1, 1), np.int8), np.empty(N, np.int32)
    pack_weights(np.ascontiguousarray(wq.const).reshape(-1), N, K, 1, 1, -(-K // 4) * 4, panels, rowsum)
    wp = graph.add_const(graph.fresh_name(f"{wq.name}_vnni"), panels)
    sums = graph.add_const(graph.fresh_name(f"{wq.name}_rowsum"), rowsum)
    graph.opsets.setdefault("ge", 1)
    replace_pattern(graph, [gemm], "QGemm", [x[1], x[2], x[3], wp, ws, sums] + ([bias] if bias is not None else []),
                    {"weight_shape": [int(N), int(K)]}, "ge", name=gemm.name)
    return True


def fuse_qdq(graph, options=None) -> bool:
    changed = False
    for qn in [n for n in graph.nodes if n.op_type == "QuantizeLinear" and n.domain == ""]:
        if qn in graph.nodes:
            changed |= _fuse(graph, qn)
    for gemm in [n for n in graph.nodes if n.op_type == "Gemm" and n.domain == ""]:
        changed |= _fuse_gemm(graph, gemm)
    return changed

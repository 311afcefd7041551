"""pack_bf16_convs: Convs that compute between bfloat16 Casts run on AVX512-BF16 (conv_bf16.py), their
weights packed once (GE's Cube unit on bfloat16: 16-bit operands, float32 accumulation).

    x32 = Cast[to=f32](x:bf16);  [z32 = Cast[to=f32](z:bf16)]
    y32 = Conv | ge::FusedConv[Relu](x32, W, B[, z32]);  y:bf16 = Cast[to=bf16](y32)
 -> y:bf16 = ge::ConvBF16[..., weight_shape=[M, C, kh, kw]](x, Wp, B[, z])

This is what allow_mix_precision_bf16 (precision_mode, then compute_in_float32) makes of every Conv it
reduces, and what a bfloat16 model's Convs become. The float32 path rounds W to bfloat16 already (the
weight's Cast folds) and the result to bfloat16 after the conv; this kernel reads the same bfloat16
operands, sums in float32 (in another order: vdpbf16ps adds pairs) and rounds once, so results agree within
bfloat16 rounding, not bitwise. Wp = conv_bf16.pack_weights(W as bfloat16); B is zeros when absent.

Algorithm, one sweep in order:
  Step 1: match a Conv / unpacked FusedConv, 2-D, ungrouped, undilated, activation none or Relu, whose x
          (and Z) are Casts to float32 of bfloat16 values, W (and B) float32 constants, and whose result's
          one reader is a Cast to bfloat16.
  Step 2: new constants for the packed weights (and a zero bias).
  Step 3: one ge::ConvBF16 replaces the Conv and the Cast after it, reading the bfloat16 values; the
          Casts before it go with eliminate_dead_code when nothing else reads them.
Limits: only on a CPU with AVX512-BF16 (conv_bf16.HAS_BF16; elsewhere the float32 path runs as before)
and with conv_bf16.USE_BF16; MatMul / Gemm are not lowered (ResNet-50's one Gemm is 0.1% of its MACs).
"""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import BFLOAT16
from ..kernels import conv_bf16
from .pattern import only_reader, producer, replace_pattern

F32 = np.dtype(np.float32)


def _widened(v):
    """The bfloat16 value v is a float32 Cast of, else None."""
    cast = producer(v, ("Cast",))
    if cast is None or v.dtype != F32 or cast.inputs[0].dtype != BFLOAT16:
        return None
    return cast.inputs[0]


def _match(graph, node):
    """Step 1: (x, z or None, the Cast after node) when node lowers, else None."""
    if (node.op_type, node.domain) not in (("Conv", ""), ("FusedConv", "ge")) or "weight_shape" in node.attrs:
        return None
    a = node.attrs
    if int(a.get("group", 1)) != 1 or any(int(d) != 1 for d in a.get("dilations", [1, 1])) or \
            (a.get("activation", "") or "") not in ("", "Relu") or len(node.inputs) < 2:
        return None
    x, w = _widened(node.inputs[0]), node.inputs[1]
    b = node.inputs[2] if len(node.inputs) > 2 else None
    zf = node.inputs[3] if len(node.inputs) > 3 else None
    z = _widened(zf) if zf is not None else None
    if x is None or w.const is None or w.const.dtype != F32 or w.const.ndim != 4 or (zf is not None and z is None):
        return None
    if b is not None and (b.const is None or b.const.dtype != F32):
        return None
    y = node.outputs[0]
    after = y.users[0] if len(y.users) == 1 else None
    if after is None or not only_reader(graph, y, after) or after.op_type != "Cast" or \
            after.outputs[0].dtype != BFLOAT16 or x.shape is None or len(x.shape) != 4:
        return None
    return x, z, after


def pack_bf16_convs(graph) -> bool:
    if not (conv_bf16.HAS_BF16 and conv_bf16.USE_BF16):
        return False
    changed = False
    for node in list(graph.nodes):
        m = _match(graph, node)
        if m is None:
            continue
        x, z, after = m
        # Step 2: the packed weights, the bias
        w = node.inputs[1].const
        M, C, KH, KW = w.shape
        packed = np.empty(conv_bf16.packed_size(M, C, KH, KW), np.uint16)
        conv_bf16.pack_weights(np.ascontiguousarray(w.astype(BFLOAT16)).view(np.uint16).reshape(-1), M, C, KH, KW,
                               packed)
        wp = graph.add_const(graph.fresh_name(f"{node.inputs[1].name}_bf16"), packed.view(BFLOAT16))
        b = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] is not None else \
            graph.add_const(graph.fresh_name(f"{node.name}_bias0"), np.zeros(M, np.float32))
        # Step 3: one node for the Conv and its Cast
        graph.opsets.setdefault("ge", 1)
        attrs = {k: v for k, v in node.attrs.items() if k != "activation_params"}
        attrs["weight_shape"] = [int(M), int(C), int(KH), int(KW)]
        replace_pattern(graph, [node, after], "ConvBF16", [x, wp, b] + ([z] if z is not None else []), attrs,
                        "ge", name=node.name)
        changed = True
    return changed

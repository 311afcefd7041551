"""pack_conv_weights: constant conv weights stored once in the layout the IMPLICIT conv kernel reads (GE's
weight-format transformation, as ATC turns Conv2D weights into FRACTAL_Z for the Cube unit).

    Conv(x, W[M, Cg, kh, kw], B)            -> ge::FusedConv[weight_shape=[M, Cg, kh, kw]](x, Wp, B)
    ge::FusedConv[...](x, W, B, Z)          -> ge::FusedConv[..., weight_shape=...](x, Wp, B, Z)

Wp = conv_implicit.pack(W, group): per group, panels of two vectors of output channels, each [K, width]
with K = Cg*kh*kw. Without it every IMPLICIT block would pack its group again on every run (ResNet-50's
convs: 123 ms with packing per run, 81 ms packed once, onnxruntime 77 ms, one core each).

Algorithm, one sweep in order:
  Step 1: match a Conv or an unpacked FusedConv whose W is a float constant of a conv IMPLICIT suits
          (conv.wants_packed: 1-D or 2-D, not depthwise, a panel of output channels a group or more; a
          vector or more when x is a float32 Cast of a 16-bit value: only IMPLICIT reads 16-bit maps).
  Step 2: a new constant with the packed weights (the old one goes when nothing else reads it).
  Step 3: the node becomes a FusedConv with the same inputs, attributes and output, and `weight_shape`.
Small-K pointwise convs stay unpacked (`_pointwise_small_k`): a 1x1, stride 1, unpadded conv reading fewer
than POINTWISE_MAX_CG input channels a group over a plane of MIN_PLANE positions or more runs POINTWISE (the
input itself is the GEMM's B), faster than IMPLICIT there, whose K of 16-24 leaves its broadcasts too short
to hide the output tile's loads and stores. Per node, one core (AVX2, medians of 20, 2026-12-06):
MobileNetV2's expand 24 -> 144 on 56x56 1.78 -> 1.34 ms, SqueezeNet's expand 16 -> 64 on 55x55 0.49 ->
0.21-0.42; at 40 input channels packing still wins (MBConv's expand 40 -> 240 on 28x28: 0.80 packed, 1.02-1.15
not), and so it does on a 1x1 plane (SE's convs: 0.010 against 0.013 ms). Whole blocks in one process, this rule
against packing those convs, alternating, medians of 60: MobileNetV2's block 2.52 -> 1.90 ms (its expand 1.20 ->
0.61), SqueezeNet's fire 3.10 -> 3.04 (expand1x1 0.50 -> 0.36).
Limits: weights computed at run time, 3-D convs, ConvTranspose and conv.USE_IMPLICIT = False stay as they
are. Invariant: outputs keep their bits (IMPLICIT computes the same FMA chains packed or not).
"""
from __future__ import annotations

import numpy as np

from ..kernels import conv
from ..kernels.conv_implicit import pack
from ..ir.dtypes import is_half
from .pattern import producer, replace_pattern


POINTWISE_MAX_CG = 32   # fewer input channels a group than this: see the module doc
MIN_PLANE = 64


def _pointwise_small_k(node, w) -> bool:
    """A 1x1, stride 1, unpadded conv with a short K over a plane of MIN_PLANE or more: POINTWISE wins."""
    x, a = node.inputs[0], node.attrs
    if w.ndim != 4 or w.shape[2:] != (1, 1) or w.shape[1] >= POINTWISE_MAX_CG or not x.is_static:
        return False
    if any(int(v) != 1 for v in a.get("strides", [1, 1])) or any(int(v) for v in a.get("pads", [0] * 4)):
        return False
    if a.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        return False
    return int(np.prod(x.shape[2:])) >= MIN_PLANE


def packable(node) -> bool:
    """Whether this pass packs the node's weights (Step 1's match)."""
    if (node.op_type, node.domain) not in (("Conv", ""), ("FusedConv", "ge")) or "weight_shape" in node.attrs:
        return False
    w = node.inputs[1] if len(node.inputs) > 1 else None
    x = node.inputs[0]
    if w is None or w.const is None or (x.dtype is not None and x.dtype != w.const.dtype):
        return False
    cast = producer(x, ("Cast",))
    half = cast is not None and is_half(cast.inputs[0].dtype)  # a 16-bit feature map: conv_half.py
    if not half and _pointwise_small_k(node, w.const):
        return False
    return conv.wants_packed(w.const.shape, int(node.attrs.get("group", 1)), w.const.dtype, half)


def pack_conv_weights(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        # Step 1: match
        if not packable(node):
            continue
        # Step 2: the packed constant
        w = node.inputs[1]
        packed = graph.add_const(graph.fresh_name(f"{w.name}_packed"), pack(w.const, int(node.attrs.get("group", 1))))
        # Step 3: the FusedConv reading it
        graph.opsets.setdefault("ge", 1)
        inputs = [node.inputs[0], packed] + list(node.inputs[2:])
        replace_pattern(graph, [node], "FusedConv", inputs, {**node.attrs, "weight_shape": list(w.const.shape)}, "ge",
                        name=node.name)
        changed = True
    return changed

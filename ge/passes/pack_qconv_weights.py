"""pack_qconv_weights: constant int8 weights of fuse_qdq's QLinearConvs stored once in conv_vnni's panels.

    ge::QLinearConv(x, xs, xzp, W[M, C, kh, kw], ws, -, ys, yzp, b)
        -> ge::QLinearConv[weight_shape=[M, C, kh, kw]](x, xs, xzp, Wp, ws, -, ys, yzp, b, rowsum(W))

Wp = conv_vnni.pack_weights(W): panels of 32 output channels, 4 input channels a lane (vpdpbusd's
operand); rowsum is each output channel's weight sum, the zero-point correction. Packing on every run made
the int8 ResNet-50 slower than float32 (the 14x14 stage's 3x3 256 -> 256: 5.0 ms a run, 1.9 of them GEMM).

Algorithm, one sweep in order:
  Step 1: match an unpacked ge::QLinearConv whose W is a constant the VNNI kernel takes
          (qlinear.wants_vnni: 2-D, ungrouped, undilated, int8 without zero point).
  Step 2: new constants for the panels and the row sums (the old W goes when nothing else reads it).
  Step 3: the node reads them, with `weight_shape`.
Invariant: outputs keep their bits (the kernel packs the same panels itself otherwise).
"""
from __future__ import annotations

import numpy as np

from ..kernels import qlinear
from ..kernels.bind import node_context, node_kernel
from ..kernels.conv_vnni import NR, pack_weights, packed_size
from .pattern import replace_pattern


def _packable(graph, node) -> bool:
    if (node.op_type, node.domain) != ("QLinearConv", "ge") or "weight_shape" in node.attrs:
        return False
    w = node.inputs[3] if len(node.inputs) > 3 else None
    if w is None or w.const is None or len(w.const.shape) != 4 or not qlinear.USE_VNNI:
        return False
    ctx = node_context(graph, node, node_kernel(graph, node))
    if any(s is None for i, s in enumerate(ctx.inputs) if node.inputs[i] is not None):
        return False
    geom, _ = qlinear._conv_parts(ctx, 0, 3)
    return qlinear.wants_vnni(ctx, geom)


def pack_qconv_weights(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        # Step 1: match
        if not _packable(graph, node):
            continue
        # Step 2: the panels and row sums
        w = node.inputs[3]
        M, C, KH, KW = w.const.shape
        panels, rowsum = np.empty(packed_size(M, C, KH, KW), np.int8), np.empty(M, np.int32)
        pack_weights(np.ascontiguousarray(w.const).reshape(-1), M, C, KH, KW, -(-C // 4) * 4, panels, rowsum)
        assert panels.size % (NR * 4) == 0
        wp = graph.add_const(graph.fresh_name(f"{w.name}_vnni"), panels)
        sums = graph.add_const(graph.fresh_name(f"{w.name}_rowsum"), rowsum)
        # Step 3: the node reads them
        inputs = list(node.inputs[:3]) + [wp] + list(node.inputs[4:]) + [None] * (9 - len(node.inputs)) + [sums]
        replace_pattern(graph, [node], "QLinearConv", inputs, {**node.attrs, "weight_shape": [M, C, KH, KW]}, "ge",
                        name=node.name)
        changed = True
    return changed

"""pack_matmul_weights: constant MatMul weights stored once in the panels gemm.py's blocked loop reads
(as pack_conv_weights does for convs: GE's weight-format transformation).

    MatMul(x, W[K, N])                 -> ge::FusedMatMul[weight_shape=[K, N]](x, Wp)
    ge::FusedMatMul[...](x, W, bias)   -> ge::FusedMatMul[..., weight_shape=[K, N]](x, Wp, bias)

Wp = gemm_packed.pack_b(W): per k block, panels of two vectors of columns, zero-padded. Without it every
run packs each block of W again (gemm._pack_block); with it the kernel (matmul.matmul_packed) reads the
panels in place. ViT-B's block (197 tokens, AMD EPYC without AVX-512, one core): see docs/performance-log.md / the commit.

Algorithm, one sweep in order:
  Step 1: match a MatMul or an unpacked FusedMatMul whose B is a float32/float64 constant matrix of at
          least a panel of columns, and whose A has B's dtype and rank >= 1 (its batches fold into rows).
  Step 2: a new constant with the packed weights (the old one goes when nothing else reads it).
  Step 3: the node becomes a FusedMatMul with the same inputs, attributes and output, and `weight_shape`.
Limits: weights computed at run time, batched (3-D+) or 1-D weights, Gemm stay as they are.
Invariant: outputs keep their bits (the same FMA chains packed or not: gemm_packed.py).
"""
from __future__ import annotations

import numpy as np

from ..kernels.gemm_packed import pack_b, panel_width
from .pattern import replace_pattern


def _packable(node) -> bool:
    if (node.op_type, node.domain) not in (("MatMul", ""), ("FusedMatMul", "ge")) or "weight_shape" in node.attrs:
        return False
    x, w = node.inputs[0], node.inputs[1]
    if w is None or w.const is None or w.const.ndim != 2 or w.const.dtype not in (np.float32, np.float64):
        return False
    if x.dtype is None or x.dtype != w.const.dtype or x.shape is None or len(x.shape) < 1:
        return False
    return w.const.shape[1] >= panel_width(w.const.dtype)


def pack_matmul_weights(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        # Step 1: match
        if not _packable(node):
            continue
        # Step 2: the packed constant
        w = node.inputs[1]
        packed = graph.add_const(graph.fresh_name(f"{w.name}_packed"), pack_b(w.const))
        # Step 3: the FusedMatMul reading it
        graph.opsets.setdefault("ge", 1)
        inputs = [node.inputs[0], packed] + list(node.inputs[2:])
        replace_pattern(graph, [node], "FusedMatMul", inputs, {**node.attrs, "weight_shape": list(w.const.shape)},
                        "ge", name=node.name)
        changed = True
    return changed

"""pack_bf16_matmuls: MatMuls and Gemms with constant weights that compute on a bfloat16 input run on
AVX512-BF16 (gemm_bf16.py), their weights packed once in bfloat16 (GE's Cube unit on bfloat16).

    a32 = Cast[to=f32](a:bf16)
    y32 = MatMul | ge::FusedMatMul[act](a32, W[K, N][, bias])     (Gemm / FusedGemm: transA 0, alpha = beta = 1,
 -> y32 = ge::MatMulBF16[weight_shape=[K, N], act](a, Wp, bias)      C a constant row; transB transposes W)

This is what allow_mix_precision_bf16 (precision_mode, then compute_in_float32) makes of ViT's and BERT's
projections and MLPs and of ResNet's classifier. The float32 path reads the same operands: A's bfloat16
widened, W already bfloat16 values (the weight's Cast folded; W is required to be exactly bfloat16), and
this kernel's float32 epilogue is the float path's. Only the sums' order changes (vdpbf16ps adds the two
products of a K pair into the lane), so results agree to float32 rounding of the sums, not bitwise, before
the Cast to bfloat16 that follows (it stays: the result is float32). Wp = gemm_bf16.pack_b(W as bfloat16);
the bias is zeros when absent.

Algorithm, one sweep in order:
  Step 1: match a MatMul / unpacked FusedMatMul / Gemm / FusedGemm whose A is a float32 Cast of a bfloat16
          value of rank >= 2 (Gemm: 2) with an even K, whose W is a 2-D float32 constant of bfloat16 values
          and whose bias (C) is absent or a constant of N float32 values.
  Step 2: new constants for the packed weights (and a zero bias).
  Step 3: one ge::MatMulBF16 replaces the node, reading the bfloat16 A; the Cast before it goes with
          eliminate_dead_code when nothing else reads it.
Limits: only on a CPU with AVX512-BF16 (conv_bf16.HAS_BF16, and conv_bf16.USE_BF16 for bisecting);
batched weights (attention's MatMuls) and odd K stay on the float32 path.
Runs before pack_matmul_weights, which would pack the same weights as float32 panels.
"""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import BFLOAT16
from ..kernels import conv_bf16, gemm_bf16
from .pack_bf16_convs import F32, _widened
from .pattern import replace_pattern

MATMULS = (("MatMul", ""), ("FusedMatMul", "ge"))
GEMMS = (("Gemm", ""), ("FusedGemm", "ge"))


def _gemm_weights(node):
    """(W [K, N], C or None) of a Gemm that lowers, else None."""
    a = node.attrs
    if int(a.get("transA", 0)) or float(a.get("alpha", 1.0)) != 1.0 or float(a.get("beta", 1.0)) != 1.0:
        return None
    w = node.inputs[1].const
    if w is None or w.ndim != 2:
        return None
    return (w.T if int(a.get("transB", 0)) else w), (node.inputs[2] if len(node.inputs) > 2 else None)


def _match(node):
    """Step 1: (a, W [K, N], bias values or None) when node lowers, else None."""
    kind = (node.op_type, node.domain)
    if kind in MATMULS and "weight_shape" not in node.attrs and len(node.inputs) >= 2:
        w, c = node.inputs[1].const, (node.inputs[2] if len(node.inputs) > 2 else None)
    elif kind in GEMMS and len(node.inputs) >= 2:
        w, c = _gemm_weights(node) or (None, None)
    else:
        return None
    a = _widened(node.inputs[0])
    if a is None or a.shape is None or len(a.shape) < 2 or (kind in GEMMS and len(a.shape) != 2):
        return None
    if w is None or w.dtype != F32 or w.ndim != 2 or w.shape[0] != a.shape[-1] or w.shape[0] % 2:
        return None
    if not np.array_equal(w.astype(BFLOAT16).astype(F32), w, equal_nan=True):
        return None   # not bfloat16 values: the float path would not round them
    bias = None
    if c is not None:
        if c.const is None or c.const.dtype != F32 or c.const.size != w.shape[1] or \
                any(d != 1 for d in c.const.shape[:-1]) or (c.const.ndim and c.const.shape[-1] != w.shape[1]):
            return None
        bias = c.const.reshape(-1)
    return a, w, bias


def pack_bf16_matmuls(graph) -> bool:
    if not (conv_bf16.HAS_BF16 and conv_bf16.USE_BF16):
        return False
    changed = False
    for node in list(graph.nodes):
        m = _match(node)
        if m is None:
            continue
        a, w, bias = m
        # Step 2: the packed weights, the bias
        K, N = w.shape
        packed = np.empty(gemm_bf16.packed_size(K, N), np.uint16)
        gemm_bf16.pack_b(np.ascontiguousarray(w.astype(BFLOAT16)).view(np.uint16).reshape(-1), K, N, packed)
        wp = graph.add_const(graph.fresh_name(f"{node.inputs[1].name}_bf16"), packed.view(BFLOAT16))
        b = graph.add_const(graph.fresh_name(f"{node.name}_bias"),
                            np.ascontiguousarray(bias) if bias is not None else np.zeros(N, np.float32))
        # Step 3: one node reading the bfloat16 A
        graph.opsets.setdefault("ge", 1)
        attrs = {k: v for k, v in node.attrs.items() if k in ("activation", "activation_params")}
        attrs["weight_shape"] = [int(K), int(N)]
        replace_pattern(graph, [node], "MatMulBF16", [a, wp, b], attrs, "ge", name=node.name)
        changed = True
    return changed

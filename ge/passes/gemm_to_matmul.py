"""gemm_to_matmul: in a decoder step (Options.kv_cache_max_len), a Gemm over constant weights becomes the
ge::FusedMatMul that pack_matmul_weights then packs.

    Gemm[transA=0, alpha=1, beta=1](x[M, K], W, c)   -> ge::FusedMatMul(x, W, c)       c: [N] or [1, N]
    Gemm[transB=1, ...](x, W[N, K], c)                -> ge::FusedMatMul(x, W^T, c)
    ge::FusedGemm[activation, ...]                    -> ge::FusedMatMul[activation, ...]

Why: a decode step's projections are one-row GEMVs that stream every weight each step (GPT-2's Conv1D
exports them as Gemm). Gemm's kernel reads W row-major, eight rows a pass (gemv.gemv: eight short streams
when the rows are short); the packed panels are one stream with the panel in registers (gemv.gemv_packed),
12-28% less CPU at GPT-2 12 x 768's sizes. The same bits: each y the same chain in k's order, then
act(1 * y + 0 + 1 * c) in both epilogues (gemv.py; for more rows, a prefill plan, gemm_packed.py).
Only in decoder steps (graph.kv_cache, ge/kv_cache.py): elsewhere a Gemm keeps its kernel (a classifier's
Gemm at batch 1 would gain too; unmeasured, and other plans' op counts stay).

Step 1: match a Gemm / ge::FusedGemm with transA 0, alpha 1, beta 1 (or no C), C a row of N, B a 2-D
        float32/float64 constant of A's dtype with at least a panel of columns.
Step 2: W^T as a new constant when transB = 1 (the old one goes when nothing else reads it).
Step 3: one FusedMatMul with A, W and C, the activation attributes kept, under the Gemm's name and output.
"""
from __future__ import annotations

import numpy as np

from ..kernels.gemm_packed import panel_width
from .pattern import replace_pattern

KEPT = ("activation", "activation_params")


def _convertible(node) -> bool:
    if (node.op_type, node.domain) not in (("Gemm", ""), ("FusedGemm", "ge")):
        return False
    a = node.attrs
    if a.get("transA", 0) or float(a.get("alpha", 1.0)) != 1.0 or len(node.inputs) < 2:
        return False
    x, w = node.inputs[0], node.inputs[1]
    c = node.inputs[2] if len(node.inputs) > 2 else None
    if w is None or w.const is None or w.const.ndim != 2 or w.const.dtype not in (np.float32, np.float64) \
            or x.dtype != w.const.dtype:
        return False
    n = w.const.shape[0 if a.get("transB", 0) else 1]
    if c is not None and (float(a.get("beta", 1.0)) != 1.0 or c.dtype != x.dtype or c.shape is None
                          or tuple(c.shape) not in ((n,), (1, n))):
        return False
    return n >= panel_width(w.const.dtype)


def gemm_to_matmul(graph) -> bool:
    if not getattr(graph, "kv_cache", None):
        return False
    changed = False
    for node in list(graph.nodes):
        # Step 1
        if not _convertible(node):
            continue
        # Step 2
        w = node.inputs[1]
        if node.attrs.get("transB", 0):
            w = graph.add_const(graph.fresh_name(f"{w.name}_t"), np.ascontiguousarray(w.const.T))
        # Step 3
        graph.opsets.setdefault("ge", 1)
        attrs = {k: node.attrs[k] for k in KEPT if k in node.attrs}
        replace_pattern(graph, [node], "FusedMatMul", [node.inputs[0], w, *node.inputs[2:3]], attrs, "ge",
                        name=node.name)
        changed = True
    return changed

"""kv_cache_attention: ge::Attention reading keys and values from ge::KVCacheAppend -> ge::CachedAttention.

With Options.kv_cache_max_len (ge/kv_cache.py), `present` is ge::KVCacheAppend(cache, new, mask): the cache's
buffer seen as [batch, heads, total, head], whose rows are max_len apart. fuse_attention's node reads it as
K and V (through an identity perm: the head dim last, rows after heads); it becomes
    ge::CachedAttention(q, k_cache, v_cache, mask, k_new, v_new[, past])[scale, q_perm, y_perm, is_causal,
                                                                         nan_guard, max_len]
which writes the new rows into the caches and attends over them in place (ge/kernels/kv_cache.py); with
Options.kv_cache_static the append's fourth input, the past length as a value, is its `past`.
Step 1: match each ge::Attention whose K and V are KVCacheAppend outputs, read with identity perms.
Step 2: one CachedAttention under the Attention's name and output.
Step 3: its output's shape from Q's (static where Q is, though the cache's rows are not).
A KVCacheAppend left with another reader is refused after the passes (ge/kv_cache.py's check).
"""
from __future__ import annotations

from .pattern import replace_pattern

IDENTITY = [0, 1, 2, 3]


def _append(v):
    p = v.producer
    return p if p is not None and p.op_type == "KVCacheAppend" and p.domain == "ge" else None


def kv_cache_attention(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        if node.op_type != "Attention" or node.domain != "ge" or len(node.inputs) < 3:
            continue
        # Step 1
        k, v = _append(node.inputs[1]), _append(node.inputs[2])
        if k is None or v is None or list(node.attrs.get("k_perm", IDENTITY)) != IDENTITY \
                or list(node.attrs.get("v_perm", IDENTITY)) != IDENTITY:
            continue
        cache = k.inputs[0]
        if cache.shape is None or len(cache.shape) != 4 or not isinstance(cache.shape[2], int):
            continue
        mask = node.inputs[3] if len(node.inputs) > 3 else None
        # Step 2
        attrs = {a: node.attrs[a] for a in ("scale", "q_perm", "y_perm", "is_causal", "nan_guard") if a in node.attrs}
        attrs["max_len"] = int(cache.shape[2])
        past = [k.inputs[3]] if len(k.inputs) > 3 else []   # kv_cache_static: the past length, a value
        replace_pattern(graph, [node], "CachedAttention",
                        [node.inputs[0], node.inputs[1], node.inputs[2], mask, k.inputs[1], v.inputs[1], *past], attrs,
                        "ge", name=node.name)
        changed = True
    # Step 3: Y's shape from Q's, each round (its kernel's infer runs on static inputs only, and the cache's rows
    # are symbolic): [batch, heads, new, head] through y_perm, so what follows is static where Q is
    for node in graph.nodes:
        q = node.inputs[0].shape if node.op_type == "CachedAttention" and node.domain == "ge" else None
        if q is not None and len(q) == 4 and node.inputs[1].shape is not None:
            qp, yp = list(node.attrs.get("q_perm", IDENTITY)), list(node.attrs.get("y_perm", IDENTITY))
            logical = (q[qp[0]], q[qp[1]], q[qp[2]], node.inputs[2].shape[3])
            shape = tuple(logical[a] for a in yp)
            if node.outputs[0].shape != shape:
                node.outputs[0].shape, changed = shape, True
    return changed

"""LinearAttention (opset 27): the recurrent state S (d_k x d_v per kv head) updated token by token, read by
each query head of its group: o_t = scale * q_t^T S_t.

Update rules (the spec's): linear S + k v^T; gated exp(g) S + k v^T (g per key dim or per head); delta
S + beta k (v - S^T k)^T; gated_delta the delta rule on exp(g) S. Inputs are the packed [B, T, H*d] form;
past_state and present_state are [B, H_kv, d_k, d_v] (present_state is where the kernel keeps S). GQA: query
head h reads kv head h // (q_heads / kv_heads). scale defaults to 1/sqrt(d_k), rounded to float32 as the
function computes it.
ONNX's function for the op is a Scan over the sequence: ge ran it that way first (host-driven, runtime_v2
only), 4.9 ms for the node cases' B=2, T=4, 4 heads of 8x8 against onnxruntime's 0.1 ms (one core, shared
machine); this kernel keeps the state in place and runs on both runtimes.

Blocks (AI cores): the (batch, kv head) pairs; a pair's tokens stay in one block (the recurrence).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .blocks import blocks, own, per_block, tiled
from .registry import KernelContext, Launch, TensorSpec, register
from .tiling import block_range

RULES = {"linear": 0, "gated": 1, "delta": 2, "gated_delta": 3}
_NS = 1.0  # per state element and token, a guess (not measured)


@njit(nogil=True, cache=True)
def linear_attention(q, k, v, past, decay, beta, y, state, ws, dims, scale, block_idx, block_dim):
    """dims: B, T, Hq, Hkv, dk, dv, decay width (dk or 1), beta heads (Hkv or 1), rule, has_past."""
    B, T, Hq, Hkv, dk, dv, dw, bh, rule, has_past = (dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                                                     dims[6], dims[7], dims[8], dims[9])
    group = Hq // Hkv
    d = own(ws, dv, block_idx, block_dim)
    sc = y.dtype.type(scale)
    p0, p1 = block_range(B * Hkv, 1, block_idx, block_dim)
    for p in range(p0, p1):
        b, hk = p // Hkv, p % Hkv
        S = state[p * dk * dv:(p + 1) * dk * dv]
        if has_past:
            S[:] = past[p * dk * dv:(p + 1) * dk * dv]
        else:
            S[:] = 0
        for t in range(T):
            row = b * T + t
            ko, vo = (row * Hkv + hk) * dk, (row * Hkv + hk) * dv
            if rule == 1 or rule == 3:
                go = (row * Hkv + hk) * dw
                for i in range(dk):
                    e = y.dtype.type(math.exp(decay[go + (i if dw > 1 else 0)]))
                    for j in range(dv):
                        S[i * dv + j] *= e
            if rule >= 2:
                bt = beta[row * bh + (hk if bh > 1 else 0)]
                for j in range(dv):
                    r = y.dtype.type(0)
                    for i in range(dk):
                        r += S[i * dv + j] * k[ko + i]
                    d[j] = bt * (v[vo + j] - r)
            else:
                d[:] = v[vo:vo + dv]
            for i in range(dk):
                ki = k[ko + i]
                for j in range(dv):
                    S[i * dv + j] += ki * d[j]
            for h in range(hk * group, (hk + 1) * group):
                qo, yo = (row * Hq + h) * dk, (row * Hq + h) * dv
                for j in range(dv):
                    d[j] = 0
                for i in range(dk):
                    qi = q[qo + i]
                    for j in range(dv):
                        d[j] += qi * S[i * dv + j]
                for j in range(dv):
                    y[yo + j] = sc * d[j]


def _dims(ctx: KernelContext):
    q, k, v = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    if q.dtype not in (np.float32, np.float64) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ctx.error(f"query, key and value must all be float32 or float64, got {q.dtype}, {k.dtype}, {v.dtype}")
    Hq, Hkv = int(ctx.attr("q_num_heads", 0)), int(ctx.attr("kv_num_heads", 0))
    if len(q.shape) != 3 or len(k.shape) != 3 or len(v.shape) != 3 or Hq <= 0 or Hkv <= 0 or Hq % Hkv:
        raise ctx.error(f"needs 3-D query/key/value and q_num_heads a multiple of kv_num_heads, got {q.shape}, "
                        f"{k.shape}, {v.shape}, heads {Hq}/{Hkv}")
    B, T = q.shape[:2]
    dk, dv = q.shape[2] // Hq, v.shape[2] // Hkv
    if (q.shape[2] % Hq or v.shape[2] % Hkv or tuple(k.shape) != (B, T, Hkv * dk)
            or tuple(v.shape[:2]) != (B, T)):
        raise ctx.error(f"query {q.shape}, key {k.shape} and value {v.shape} do not fit {Hq} query heads and "
                        f"{Hkv} kv heads")
    return B, T, Hq, Hkv, dk, dv


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    B, T, Hq, Hkv, dk, dv = _dims(ctx)
    dt = ctx.inputs[0].dtype
    return [TensorSpec((B, T, Hq * dv), dt), TensorSpec((B, Hkv, dk, dv), dt)]  # the schema has both outputs


def _optional(ctx, i, name, shapes):
    if not ctx.has(i):
        return None
    s = ctx.inputs[i]
    if s.dtype != ctx.inputs[0].dtype or tuple(s.shape) not in shapes:
        raise ctx.error(f"{name} is {s.dtype}{s.shape}; wants {ctx.inputs[0].dtype} of shape "
                        f"{' or '.join(map(str, shapes))}")
    return s


@register("LinearAttention", infer=_infer, since=27)
def _prepare(ctx: KernelContext) -> Launch:
    B, T, Hq, Hkv, dk, dv = _dims(ctx)
    rule = RULES.get(ctx.attr("update_rule", "gated_delta"))
    if rule is None:
        raise ctx.error(f"update_rule must be one of {', '.join(RULES)}, got {ctx.attr('update_rule')!r}")
    _optional(ctx, 3, "past_state", [(B, Hkv, dk, dv)])
    decay = _optional(ctx, 4, "decay", [(B, T, Hkv * dk), (B, T, Hkv)])
    beta = _optional(ctx, 5, "beta", [(B, T, Hkv), (B, T, 1)])
    gated, delta = rule in (1, 3), rule >= 2
    if gated != (decay is not None) or delta != (beta is not None):  # the reference refuses both ways
        takes = ("neither decay nor beta", "decay", "beta", "decay and beta")[rule]
        raise ctx.error(f"update_rule {ctx.attr('update_rule', 'gated_delta')!r} takes {takes}")
    dw = 0 if decay is None else (dk if decay.shape[2] == Hkv * dk else 1)
    bh = 0 if beta is None else beta.shape[2]
    dims = np.array([B, T, Hq, Hkv, dk, dv, dw, bh, rule, ctx.has(3)], np.int64)
    scale = float(ctx.attr("scale", 0.0)) or float(np.float32(1) / np.sqrt(np.float32(dk)))
    nb = blocks(ctx, B * Hkv, _NS * T * dk * dv * (1 + Hq // Hkv))
    ws = [per_block(dv, ctx.inputs[0].dtype, nb)]
    inputs = (0, 1, 2, *[(i if ctx.has(i) else 0) for i in (3, 4, 5)])
    return tiled(linear_attention, (dims, scale), nb, ws, inputs=inputs)

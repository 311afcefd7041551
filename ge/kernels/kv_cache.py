"""The KV cache in place (Options.kv_cache_max_len, ge/kv_cache.py): a decoder's past keys/values live in one
buffer per layer sized for the longest sequence, [batch, heads, max_len, head]; a step writes its new rows
there and attends over the rows written so far, so no step copies the past (the exporter's
present = Concat(past, new) copied all of it, per layer and token).

ge::KVCacheAppend(cache, new, total_ref)[axis]: `present` as the exporter's graph sees it: shape [batch, heads,
total, head] with total = total_ref.shape[axis] (the attention mask's columns); no task: the output is the
cache's buffer (rows past `total` unread), its row stride max_len, not total. Only shape readers and
ge::CachedAttention may read it (ge/passes/kv_cache_attention.py checks).

ge::CachedAttention(q, k_cache, v_cache, mask, k_new, v_new[, past])[scale, q_perm, y_perm, is_causal, nan_guard,
max_len]:
ge::Attention (attention.py's attention_blocks, the same GEMM blocks and softmax, so the same bits) over the
caches' first total rows, read through the row stride max_len; before a task reads its (batch, kv head), it
writes that head's new rows at [total - new, total) (every task of that head writes the same values, so tasks
on other AI cores never see a row missing: no barrier). Rows moved per step: the new ones, O(new tokens).
`past` (Options.kv_cache_static): the past length as a value (int64 [1]); the shapes are then max_len's and
the kernel reads the first past + new rows (cached_attention_rows_at; a prefill plan's more rows:
cached_attention_blocks_at).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .attention import QB, _blocks_launch, _logical, _mask_bias, _y_layout, attention_blocks
from .fastmath import exp as fast_exp
from .gemm import MIN_BLOCK_MACS
from .reduce import U
from .registry import KernelContext, Launch, TensorSpec, register
from .tiling import block_dim_for, block_range


def _infer_append(ctx: KernelContext) -> list[TensorSpec]:
    c, new, ref = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    axis = int(ctx.attr("axis", 1))
    if len(c.shape) != 4 or len(new.shape) != 4 or new.dtype != c.dtype:
        raise ctx.error(f"cache {c.dtype}{list(c.shape)} and new rows {new.dtype}{list(new.shape)} must be "
                        "4-D [batch, heads, rows, head] of one dtype")
    total = ref.shape[axis]
    if isinstance(total, int) and isinstance(c.shape[2], int) and total > c.shape[2]:
        raise ctx.error(f"{total} rows (past + new) do not fit the cache of {c.shape[2]} rows (kv_cache_max_len)")
    return [TensorSpec((c.shape[0], c.shape[1], total, c.shape[3]), c.dtype)]


def _view(ctx: KernelContext):
    return None


register("KVCacheAppend", domain="ge", infer=_infer_append, alias=0)(_view)


@njit(nogil=True, cache=True)
def cached_attention_blocks(q, kc, vc, mask, kn, vn, y, ws, dims, qs, ks, vs, ys, ms, flags, scale, wdims,
                            block_idx, block_dim):
    """wdims: first new row (past), new rows, max_len; kn / vn [B, Hkv, new, dh|dv] contiguous. The block's
    tasks' (batch, kv head) rows written, then attention_blocks over the caches (its dims, strides)."""
    B, Hq, Hkv, Sq, dh, dv = dims[0], dims[1], dims[2], dims[3], dims[5], dims[6]
    P, S, M = wdims[0], wdims[1], wdims[2]
    nqb = (Sq + QB - 1) // QB
    t0, t1 = block_range(B * Hq * nqb, 1, block_idx, block_dim)
    group = Hq // Hkv
    last = -1
    for t in range(t0, t1):
        b, h = t // (Hq * nqb), (t // nqb) % Hq
        bh = b * Hkv + h // group
        if bh == last:
            continue
        last = bh
        for r in range(S):
            ko, so = (bh * M + P + r) * dh, (bh * S + r) * dh
            kc[ko:ko + dh] = kn[so:so + dh]
            vo, wo = (bh * M + P + r) * dv, (bh * S + r) * dv
            vc[vo:vo + dv] = vn[wo:wo + dv]
    attention_blocks(q, kc, vc, mask, y, ws, dims, qs, ks, vs, ys, ms, flags, scale, block_idx, block_dim)


@njit(nogil=True, cache=True, error_model="numpy")
def cached_attention_rows(q, kc, vc, mask, kn, vn, y, ws, dims, qs, ks, vs, ys, ms, flags, scale, wdims,
                          block_idx, block_dim):
    """A decode step's few query rows (Sq <= ROWS): per (batch, head), block by block, the new rows written,
    then per query row the scores as dot products over the cache's rows (contiguous, head dim last), the
    softmax of attention_blocks' _softmax_rows (scale, mask, causal frontier, NaN guard), and Y as a sum of
    the value rows: the cache read once, no K^T copy, no GEMM blocks for one row."""
    B, Hq, Hkv, Sq, T, dh, dv, offset = dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], dims[7]
    P, S, M = wdims[0], wdims[1], wdims[2]
    has_mask, causal, guard = flags[0], flags[1], flags[2]
    group = Hq // Hkv
    t0, t1 = block_range(B * Hq, 1, block_idx, block_dim)
    row = ws[block_idx * T:(block_idx + 1) * T]
    zero = y.dtype.type(0)
    sc = y.dtype.type(scale)
    uT, udh, udv = U(T), U(dh), U(dv)
    for t in range(t0, t1):
        b, h = t // Hq, t % Hq
        bh = b * Hkv + h // group
        for r in range(S):
            ko, so = U((bh * M + P + r) * dh), U((bh * S + r) * dh)
            for d in range(udh):
                kc[ko + d] = kn[so + d]
            vo, wo = U((bh * M + P + r) * dv), U((bh * S + r) * dv)
            for d in range(udv):
                vc[vo + d] = vn[wo + d]
        kb, vb = U(b * ks[0] + (h // group) * ks[1]), U(b * vs[0] + (h // group) * vs[1])
        for i in range(Sq):
            qo = U(b * qs[0] + h * qs[1] + i * qs[2])
            for j in range(uT):
                ko = kb + j * U(ks[2])
                acc = zero
                for d in range(udh):
                    acc += q[qo + d] * kc[ko + d]
                row[j] = acc * sc
            if has_mask:
                mb = b * ms[0] + h * ms[1] + i * ms[2]
                for j in range(T):
                    row[j] += _mask_bias(mask[mb + j * ms[3]], zero)
            if causal:
                for j in range(max(0, i + offset + 1), T):
                    row[j] = y.dtype.type(-np.inf)
            top = row[0]
            for j in range(1, T):
                top = max(top, row[j])
            total = zero
            for j in range(uT):
                e = fast_exp(row[j] - top)
                row[j] = e
                total += e
            inv = y.dtype.type(1) / total
            yo = U(b * ys[0] + h * ys[1] + i * ys[2])
            for d in range(udv):
                y[yo + d] = zero
            for j in range(uT):
                p = row[j] * inv
                if guard and p != p:
                    p = zero
                vo = vb + j * U(vs[2])
                for d in range(udv):
                    y[yo + d] += p * vc[vo + d]


@njit(nogil=True, cache=True, inline="always")
def _at_past(past, dims, wdims):
    """(fits, dims, wdims) of a step whose past length is the value past[0]: past + new key rows, the causal
    offset and the first new row at past. A past outside the cache does not fit: the kernel then writes
    nothing (Session.run refuses it before, naming the input)."""
    P, S, M = past[0], wdims[1], wdims[2]
    d, w = dims.copy(), wdims.copy()
    d[4], d[7], w[0] = P + S, P, P
    return 0 <= P and P + S <= M, d, w


@njit(nogil=True, cache=True)
def cached_attention_rows_at(q, kc, vc, mask, kn, vn, past, y, ws, dims, qs, ks, vs, ys, ms, flags, scale, wdims,
                             block_idx, block_dim):
    """Options.kv_cache_static: cached_attention_rows with the past length read from `past` (int64 [1], a
    value): the new rows go to [past, past + new) and the step attends over the first past + new rows
    (causal frontier at past), whatever the plan's shapes (max_len rows, the mask padded to them)."""
    fits, d, w = _at_past(past, dims, wdims)
    if fits:
        cached_attention_rows(q, kc, vc, mask, kn, vn, y, ws, d, qs, ks, vs, ys, ms, flags, scale, w, block_idx,
                              block_dim)


@njit(nogil=True, cache=True)
def cached_attention_blocks_at(q, kc, vc, mask, kn, vn, past, y, ws, dims, qs, ks, vs, ys, ms, flags, scale, wdims,
                               block_idx, block_dim):
    """Options.kv_cache_static with more than ROWS new rows (a prefill plan): cached_attention_blocks over the
    first past + new rows, the past length read as cached_attention_rows_at reads it (the workspace is laid
    out for max_len rows, which holds the tiles of fewer)."""
    fits, d, w = _at_past(past, dims, wdims)
    if fits:
        cached_attention_blocks(q, kc, vc, mask, kn, vn, y, ws, d, qs, ks, vs, ys, ms, flags, scale, w, block_idx,
                                block_dim)


ROWS = 4   # query rows up to which a step takes cached_attention_rows (decode: 1)


def _cache_dims(ctx: KernelContext):
    q, kc, vc = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    kn, vn = ctx.inputs[4], ctx.inputs[5]
    M = int(ctx.attr("max_len", 0))
    if q.dtype not in (np.float32, np.float64) or any(x.dtype != q.dtype for x in (kc, vc, kn, vn)):
        raise ctx.error(f"Q, the caches and the new rows must all be float32 or float64, got {q.dtype}, "
                        f"{kc.dtype}, {vc.dtype}, {kn.dtype}, {vn.dtype}")
    (B, Hq, Sq, dh), qs = _logical(ctx, 0, "q_perm")
    if any(len(x.shape) != 4 for x in (kc, vc, kn, vn)):
        raise ctx.error("the caches and the new rows must be 4-D [batch, heads, rows, head]")
    Bk, Hkv, T, dk = kc.shape
    dv, S = vc.shape[3], kn.shape[2]
    if (Bk != B or tuple(vc.shape[:3]) != (B, Hkv, T) or tuple(kn.shape) != (B, Hkv, S, dh) or
            tuple(vn.shape) != (B, Hkv, S, dv) or dk != dh or Hq % Hkv or S != Sq):
        raise ctx.error(f"Q {list(q.shape)}, caches {list(kc.shape)} / {list(vc.shape)} and new rows "
                        f"{list(kn.shape)} / {list(vn.shape)} do not fit together")
    if not 0 < T <= M:
        raise ctx.error(f"{T} rows (past + new) do not fit the cache of {M} rows (kv_cache_max_len)")
    ys, yshape = _y_layout(ctx, (B, Hq, Sq, dv))
    ks, vs = (Hkv * M * dh, M * dh, dh), (Hkv * M * dv, M * dv, dv)
    return B, Hq, Hkv, Sq, T, dh, dv, qs, ks, vs, ys, yshape, M


def _infer_cached(ctx: KernelContext) -> list[TensorSpec]:
    return [TensorSpec(_cache_dims(ctx)[11], ctx.inputs[0].dtype)]


def _prepare_cached(ctx: KernelContext) -> Launch:
    B, Hq, Hkv, Sq, T, dh, dv, qs, ks, vs, ys, _, M = _cache_dims(ctx)
    inner = _blocks_launch(ctx, B, Hq, Hkv, Sq, T, dh, dv, qs, ks, vs, ys, float(ctx.attr("scale", 1.0)),
                           int(ctx.attr("is_causal", 0)), int(ctx.attr("nan_guard", 0)), T - Sq)
    wdims = np.array([T - Sq, Sq, M], np.int64)
    if ctx.has(6):   # kv_cache_static: the past length a value, T the cache's rows
        if ctx.inputs[6].dtype != np.int64:
            raise ctx.error(f"the past length must be int64, got {ctx.inputs[6].dtype}")
        if Sq > ROWS:   # a prefill plan's rows: the GEMM blocks, as the step shaped by its past takes them
            return Launch(cached_attention_blocks_at, (*inner.args, wdims), inner.workspaces,
                          inputs=(*inner.inputs, 4, 5, 6), tiled=True, block_dim=inner.block_dim)
        bd = block_dim_for(B * Hq, ctx.cores, max(1, -(-MIN_BLOCK_MACS // max(1, Sq * T * (dh + dv)))))
        return Launch(cached_attention_rows_at, (*inner.args, wdims), (TensorSpec((bd * T,), ctx.inputs[0].dtype),),
                      inputs=(*inner.inputs, 4, 5, 6), tiled=True, block_dim=bd)
    if Sq <= ROWS:   # a decode step: rows of dot products over the cache (inner's dims, strides and flags)
        bd = block_dim_for(B * Hq, ctx.cores, max(1, -(-MIN_BLOCK_MACS // max(1, Sq * T * (dh + dv)))))
        return Launch(cached_attention_rows, (*inner.args, wdims), (TensorSpec((bd * T,), ctx.inputs[0].dtype),),
                      inputs=(*inner.inputs, 4, 5), tiled=True, block_dim=bd)
    return Launch(cached_attention_blocks, (*inner.args, wdims), inner.workspaces, inputs=(*inner.inputs, 4, 5),
                  tiled=True, block_dim=inner.block_dim)


register("CachedAttention", domain="ge", infer=_infer_cached)(_prepare_cached)

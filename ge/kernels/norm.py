"""Normalizations: BatchNormalization, LayerNormalization, InstanceNormalization, GroupNormalization, LRN,
LpNormalization, MeanVarianceNormalization. (Softmax, LogSoftmax and Hardmax live in softmax.py.)

Each op views its input as rows that share statistics and normalizes a row at a time:
- BatchNormalization (inference): per channel y = x * a + b with a = scale / sqrt(var + eps) and
  b = bias - mean * a, folded once per (n, c) plane so the plane loop is one fused multiply-add.
  training_mode=1 (opset 14+) first takes the batch mean and biased variance of each channel and also
  writes the running statistics. Before opset 9, spatial=0 means per-activation statistics: the
  parameters then cover C*H*W "channels" of one element each.
- LayerNormalization: rows are x reshaped to (prod(shape[:axis]), prod(shape[axis:])); two passes per row
  (mean, then mean of squared deviations), as the ONNX reference does.
- InstanceNormalization and GroupNormalization share one kernel: a group is cpg channels of one image
  (cpg = 1 for InstanceNormalization); scale and bias are per channel, or per group (GroupNormalization
  before opset 21).
- LRN sums squares over a window of neighbouring channels into a workspace row of H*W sums.
- MeanVarianceNormalization reuses reduce.fold to get E[x] and E[x^2] over its axes, then walks x again.

Statistics accumulate in float64 and are cast back to the tensor's dtype (a one-element scratch array)
so the per-element loops stay in that dtype and vectorize. Optional outputs the node does not declare
(LayerNormalization Mean/InvStdDev, BatchNormalization running stats) become workspaces in the same
argument positions, so one compiled kernel serves both cases; a missing bias is passed as the scale
again with has_bias=0 (Launch.inputs repeats the index).

Blocks (AI cores), never cutting a statistic: BatchNormalization inference and LRN take flat ranges of
the (N*C, HW) planes (blocks.row_range: any element is a function of its channel or its window only),
LRN with an HW workspace row per block; BN training takes whole channels, LayerNormalization whole rows,
Instance/GroupNormalization whole groups, LpNormalization ranges of the (outer, inner) columns (a norm
workspace per block), MVN ranges of its outermost kept dim as reduce.py does. Measured, float32, one
thread vs 2 blocks on 2 threads: BatchNormalization 1x64x112x112 255 -> 200 us, LayerNormalization
512x768 252 -> 179 us, InstanceNormalization 1x64x56x56 94 -> 68 us.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..ir.dtypes import HALF
from . import vector_half
from .blocks import G as GRAIN
from .blocks import blocks, own, per_block, row_range, tiled
from .half import native16
from .reduce import SQSUM, SUM, U, box, collapse, fold, slot_part, split_dim
from .registry import KernelContext, Launch, TensorSpec, normalize_axis, register, same_as_input
from .tiling import block_range

_FLOATS = (np.float32, np.float64)
# ns per element, one thread, float32 (blocks.MIN_BLOCK_NS): BatchNormalization's fused multiply-add and
# its per-plane setup, a two-pass statistics row (LayerNorm, GroupNorm, BN training), LRN per window
# channel, LpNormalization, MVN (two folds and a pass)
_NS_BN, _NS_PLANE, _NS_STATS, _NS_LRN, _NS_LP, _NS_MVN = 0.15, 20.0, 0.4, 1.1, 0.25, 0.3


def _infer_float(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, _FLOATS)
    return same_as_input()(ctx)


# -- shared row helpers -----------------------------------------------------------------------------


@njit(nogil=True, cache=True, fastmath={"reassoc"})
def _moments(x, b, n, eps):
    """(mean, 1 / sqrt(var + eps)) of x[b:b + n], two passes; reassociation lets the sums vectorize."""
    s = 0.0
    for j in range(U(n)):
        s += x[U(b) + j]
    mu = s / n
    q = 0.0
    for j in range(U(n)):
        d = x[U(b) + j] - mu
        q += d * d
    return mu, 1.0 / np.sqrt(q / n + eps)


@njit(nogil=True, cache=True, inline="always")
def _affine(x, y, b, n, a, c, ab):
    """y[b:b + n] = x * a + c, with a and c rounded to y's dtype first (ab: 2 scratch values)."""
    ab[0], ab[1] = a, c
    a1, c1 = ab[0], ab[1]
    for j in range(U(n)):
        y[U(b) + j] = x[U(b) + j] * a1 + c1


# -- BatchNormalization -----------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def batch_norm(x, scale, bias, mean, var, y, N, C, HW, eps, block_idx, block_dim):
    """Inference: y = (x - mean) / sqrt(var + eps) * scale + bias per channel of (N, C, HW); blocks split
    the (N*C, HW) planes as flat rows (blocks.row_range)."""
    ab = np.empty(2, y.dtype)
    lo, hi = row_range(N * C * HW, HW, GRAIN, block_idx, block_dim)
    for p in range(lo // max(HW, 1), (hi + HW - 1) // max(HW, 1)):
        c = p % C
        j0, j1 = max(lo - p * HW, 0), min(hi - p * HW, HW)
        a = scale[c] / np.sqrt(var[c] + eps)
        _affine(x, y, p * HW + j0, j1 - j0, a, bias[c] - mean[c] * a, ab)


@njit(nogil=True, cache=True, fastmath={"reassoc"})
def batch_norm_train(x, scale, bias, mean, var, y, run_mean, run_var, N, C, HW, eps, momentum, block_idx,
                     block_dim):
    """Training mode: normalize with the batch statistics and update the running ones; blocks split
    the channels (a channel's statistics are one reduction)."""
    ab = np.empty(2, y.dtype)
    cnt = N * HW
    c0, c1 = block_range(C, 1, block_idx, block_dim)
    for c in range(c0, c1):
        s = 0.0
        for n in range(N):
            p = U((n * C + c) * HW)
            for j in range(U(HW)):
                s += x[p + j]
        mu = s / cnt
        q = 0.0
        for n in range(N):
            p = U((n * C + c) * HW)
            for j in range(U(HW)):
                d = x[p + j] - mu
                q += d * d
        v = q / cnt
        a = scale[c] / np.sqrt(v + eps)
        for n in range(N):
            _affine(x, y, (n * C + c) * HW, HW, a, bias[c] - mu * a, ab)
        run_mean[c] = mean[c] * momentum + mu * (1 - momentum)
        run_var[c] = var[c] * momentum + v * (1 - momentum)


def _bn_training(ctx: KernelContext) -> bool:
    return ctx.opset >= 14 and bool(ctx.attr("training_mode", 0))


def _infer_bn(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, _FLOATS + (HALF if not _bn_training(ctx) else ()))
    x = ctx.inputs[0]
    if len(x.shape) < 2:
        raise ctx.error(f"input must be (N, C, ...), got shape {x.shape}")
    outs = [TensorSpec(x.shape, x.dtype)]
    if ctx.n_outputs > 1:
        if not _bn_training(ctx) or ctx.n_outputs > 3:
            raise ctx.error("outputs other than Y are only supported with training_mode=1 (opset 14+): "
                            "mean/var/saved statistics of opsets before 14 are not implemented")
        outs += [TensorSpec(ctx.inputs[i].shape, ctx.inputs[i].dtype) for i in (3, 4)][:ctx.n_outputs - 1]
    return outs


@register("BatchNormalization", infer=_infer_bn)
def _prepare_bn(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    N, C = x.shape[0], x.shape[1]
    HW = int(np.prod(x.shape[2:], dtype=np.int64))
    if ctx.opset < 9 and not ctx.attr("spatial", 1):  # per-activation parameters of C*H*W values
        C, HW = C * HW, 1
    for i in range(1, 5):
        if ctx.inputs[i].size != C:
            raise ctx.error(f"input {i} has {ctx.inputs[i].size} values, expected {C}")
    eps = float(ctx.attr("epsilon", 1e-5))
    if x.dtype in HALF:  # a 16-bit feature map (drop_half_casts)
        return vector_half.batch_norm_launch(ctx, N, C, HW, eps)
    if not _bn_training(ctx):
        return tiled(batch_norm, (N, C, HW, eps), blocks(ctx, N * C * HW, _NS_BN + _NS_PLANE / max(HW, 1)))
    ws = tuple(TensorSpec((C,), ctx.inputs[i].dtype) for i in (3, 4))[ctx.n_outputs - 1:]
    return tiled(batch_norm_train, (N, C, HW, eps, float(ctx.attr("momentum", 0.9))),
                 blocks(ctx, C, _NS_STATS * N * HW), ws)


# -- LayerNormalization -----------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def layer_norm(x, scale, bias, y, mean, inv_std, rows, n, eps, has_bias, block_idx, block_dim):
    """Normalize each row of x (rows, n), then scale and shift per column; blocks split whole rows."""
    mr = np.empty(2, y.dtype)
    r0, r1 = block_range(rows, 1, block_idx, block_dim)
    for r in range(r0, r1):
        b = U(r * n)
        mr[0], mr[1] = _moments(x, b, n, eps)
        m, rs = mr[0], mr[1]
        mean[r], inv_std[r] = m, rs
        if has_bias:
            for j in range(U(n)):
                y[b + j] = (x[b + j] - m) * rs * scale[j] + bias[j]
        else:
            for j in range(U(n)):
                y[b + j] = (x[b + j] - m) * rs * scale[j]


def _ln_axis(ctx: KernelContext) -> int:
    return normalize_axis(ctx, ctx.attr("axis", -1), len(ctx.inputs[0].shape))


def _infer_ln(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, _FLOATS)
    x = ctx.inputs[0]
    axis = _ln_axis(ctx)
    stat = TensorSpec(x.shape[:axis] + (1,) * (len(x.shape) - axis), x.dtype)
    return [TensorSpec(x.shape, x.dtype)] + [stat] * (min(ctx.n_outputs, 3) - 1)


@register("LayerNormalization", infer=_infer_ln)
def _prepare_ln(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    axis = _ln_axis(ctx)
    rows = int(np.prod(x.shape[:axis], dtype=np.int64))
    n = int(np.prod(x.shape[axis:], dtype=np.int64))
    if any(ctx.inputs[i].size != n for i in (1, 2) if ctx.has(i)):
        raise ctx.error(f"Scale and B must have the normalized shape {x.shape[axis:]} ({n} values); "
                        "broadcasting them is not supported")
    ws = (TensorSpec((rows,), x.dtype),) * (3 - min(ctx.n_outputs, 3))  # a slot per row: blocks own theirs
    return tiled(layer_norm, (rows, n, float(ctx.attr("epsilon", 1e-5)), int(ctx.has(2))),
                 blocks(ctx, rows, _NS_STATS * n), ws, inputs=(0, 1, 2 if ctx.has(2) else 1))


# -- ge::SkipLayerNormalization: fuse_skip_layer_norm's residual Add + LayerNormalization ---------------


@njit(nogil=True, cache=True)
def skip_layer_norm(x, skip, scale, bias, y, sm, rows, srows, n, eps, has_sum, block_idx, block_dim):
    """y = LayerNorm(x + skip) over rows of n (skip's row r % srows: broadcast over the leading axes), the
    sum written once into y (and into sm when has_sum: the residual the next block reads); the same
    operations as Add then layer_norm, so the same bits."""
    mr = np.empty(2, y.dtype)
    r0, r1 = block_range(rows, 1, block_idx, block_dim)
    for r in range(r0, r1):
        b, c = U(r * n), U((r % srows) * n)
        for j in range(U(n)):
            y[b + j] = x[b + j] + skip[c + j]
        mr[0], mr[1] = _moments(y, b, n, eps)
        m, rs = mr[0], mr[1]
        if has_sum:
            for j in range(U(n)):
                sm[b + j] = y[b + j]
        for j in range(U(n)):
            y[b + j] = (y[b + j] - m) * rs * scale[j] + bias[j]


def _skip_rows(ctx: KernelContext):
    """(x index, skip index, rows, skip rows, n): the Add's operands as exported, either order; the smaller
    may broadcast over leading axes only ([1, seq, hidden] + [batch, seq, hidden]: BERT's positions)."""
    a, b = ctx.inputs[0], ctx.inputs[1]
    ctx.require_dtype(0, _FLOATS)
    if a.dtype != b.dtype or not a.shape or not b.shape:
        raise ctx.error(f"the operands {a.dtype}{list(a.shape)} and {b.dtype}{list(b.shape)} must be float "
                        "tensors of one dtype")
    xi, si = (0, 1) if a.size >= b.size else (1, 0)
    x, s = ctx.inputs[xi].shape, ctx.inputs[si].shape
    full = (1,) * (len(x) - len(s)) + tuple(s)
    k = next((i for i in range(len(x)) if full[i] != 1), len(x))
    if len(s) > len(x) or full[k:] != tuple(x[k:]):
        raise ctx.error(f"the operands {list(a.shape)} and {list(b.shape)} differ other than by broadcasting "
                        "over leading axes")
    n = int(x[-1])
    rows = int(np.prod(x[:-1], dtype=np.int64))
    return xi, si, rows, max(1, int(np.prod(full[:-1], dtype=np.int64))), n


def _infer_skip_ln(ctx: KernelContext) -> list[TensorSpec]:
    xi = _skip_rows(ctx)[0]
    if ctx.n_outputs > 2:
        raise ctx.error(f"SkipLayerNormalization has 2 outputs (y, the sum), the node declares {ctx.n_outputs}")
    x = ctx.inputs[xi]
    return [TensorSpec(x.shape, x.dtype)] * ctx.n_outputs


@register("SkipLayerNormalization", domain="ge", infer=_infer_skip_ln)
def _prepare_skip_ln(ctx: KernelContext) -> Launch:
    xi, si, rows, srows, n = _skip_rows(ctx)
    if any(ctx.inputs[i].size != n for i in (2, 3)):
        raise ctx.error(f"gamma and beta must hold {n} values (the last axis)")
    ws = () if ctx.n_outputs > 1 else (TensorSpec((1,), ctx.inputs[0].dtype),)
    return tiled(skip_layer_norm, (rows, srows, n, float(ctx.attr("epsilon", 1e-5)), int(ctx.n_outputs > 1)),
                 blocks(ctx, rows, _NS_STATS * n), ws, inputs=(xi, si, 2, 3))


# -- InstanceNormalization / GroupNormalization -----------------------------------------------------


@njit(nogil=True, cache=True)
def group_norm(x, scale, bias, y, NG, G, cpg, HW, eps, sdiv, block_idx, block_dim):
    """Normalize each group of cpg channels x HW values; channel ch uses scale[ch // sdiv]. Blocks split
    whole groups."""
    ab = np.empty(2, y.dtype)
    m = cpg * HW
    g0, g1 = block_range(NG, 1, block_idx, block_dim)
    for ng in range(g0, g1):
        mu, rs = _moments(x, ng * m, m, eps)
        for ci in range(cpg):
            k = ((ng % G) * cpg + ci) // sdiv
            a = scale[k] * rs
            _affine(x, y, ng * m + ci * HW, HW, a, bias[k] - mu * a, ab)


def _infer_groups(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    if len(x.shape) < 2:
        raise ctx.error(f"input must be (N, C, ...), got shape {x.shape}")
    return _infer_float(ctx)


@register("InstanceNormalization", infer=_infer_groups)
def _prepare_instance_norm(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    N, C = x.shape[0], x.shape[1]
    HW = int(np.prod(x.shape[2:], dtype=np.int64))
    if ctx.inputs[1].size != C or ctx.inputs[2].size != C:
        raise ctx.error(f"scale and B must hold {C} values (one per channel)")
    return tiled(group_norm, (N * C, C, 1, HW, float(ctx.attr("epsilon", 1e-5)), 1),
                 blocks(ctx, N * C, _NS_STATS * HW))


@register("GroupNormalization", infer=_infer_groups, since=18)
def _prepare_group_norm(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    N, C = x.shape[0], x.shape[1]
    G = int(ctx.attr("num_groups", 0))
    if G < 1 or C % G:
        raise ctx.error(f"num_groups={G} must divide the {C} channels")
    per_group = ctx.opset < 21  # scale and bias were per group until opset 21
    want = G if per_group else C
    if ctx.inputs[1].size != want or ctx.inputs[2].size != want:
        raise ctx.error(f"scale and bias must hold {want} values at opset {ctx.opset}")
    HW = int(np.prod(x.shape[2:], dtype=np.int64))
    return tiled(group_norm, (N * G, G, C // G, HW, float(ctx.attr("epsilon", 1e-5)),
                              C // G if per_group else 1), blocks(ctx, N * G, _NS_STATS * HW * (C // G)))


# -- LRN --------------------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def lrn(x, y, sq, N, C, HW, size, alpha, beta, bias, block_idx, block_dim):
    """y = x / (bias + alpha / size * sum of x^2)^beta, the sum over channels
    c - (size-1)//2 .. c + ceil((size-1)/2) (clipped), as the ONNX spec defines it. Blocks split the
    (N*C, HW) planes as flat rows (blocks.row_range); sq holds HW sums per block."""
    before = (size - 1) // 2
    after = size - 1 - before
    k = alpha / size
    s = own(sq, HW, block_idx, block_dim)
    lo, hi = row_range(N * C * HW, HW, GRAIN, block_idx, block_dim)
    for p in range(lo // max(HW, 1), (hi + HW - 1) // max(HW, 1)):
        n, c = p // C, p % C
        u0, u1 = U(max(lo - p * HW, 0)), U(min(hi - p * HW, HW))
        for j in range(u0, u1):
            s[j] = 0
        for cc in range(max(0, c - before), min(C, c + after + 1)):
            q = U((n * C + cc) * HW)
            for j in range(u0, u1):
                s[j] += x[q + j] * x[q + j]
        q = U(p * HW)
        if beta == 0.75:  # AlexNet's value: t^0.75 = sqrt(t) * sqrt(sqrt(t)) vectorizes, pow does not
            for j in range(u0, u1):
                t = bias + k * s[j]
                r = np.sqrt(t)
                y[q + j] = x[q + j] / (r * np.sqrt(r))
        else:
            for j in range(u0, u1):
                y[q + j] = x[q + j] / (bias + k * s[j]) ** beta


def _infer_lrn(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, _FLOATS + HALF)
    return _infer_groups(ctx) if ctx.inputs[0].dtype not in HALF else same_as_input()(ctx)


@register("LRN", infer=_infer_lrn)
def _prepare_lrn(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    size = int(ctx.attr("size", 0))
    if size < 1:
        raise ctx.error("attribute size must be >= 1")
    HW = int(np.prod(x.shape[2:], dtype=np.int64))
    beta = float(ctx.attr("beta", 0.75))
    k = blocks(ctx, x.shape[0] * x.shape[1] * HW, _NS_LRN * (size + (1 if beta == 0.75 else 6)))  # pow ~6 ns
    args = (x.shape[0], x.shape[1], HW, size, float(ctx.attr("alpha", 1e-4)), beta, float(ctx.attr("bias", 1.0)))
    if x.dtype in HALF:  # a 16-bit feature map (drop_half_casts)
        return vector_half.lrn_launch(ctx, args, k)
    return tiled(lrn, args, k, (per_block(HW, x.dtype, k),))


native16("LRN")  # 16-bit feature maps: vector_half.py
native16("BatchNormalization", when=lambda n: not n.attrs.get("training_mode", 0))


# -- LpNormalization --------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def lp_norm(x, y, norm, outer, n, inner, p, block_idx, block_dim):
    """y = x / ||x||_p along the middle axis of (outer, n, inner); a zero norm gives 0 (as ONNX's cases).
    Blocks split the (outer, inner) columns (blocks.row_range); norm holds inner values per block."""
    nw = own(norm, inner, block_idx, block_dim)
    lo, hi = row_range(outer * inner, inner, GRAIN, block_idx, block_dim)
    for o in range(lo // max(inner, 1), (hi + inner - 1) // max(inner, 1)):
        _lp_columns(x, y, nw, U(o * n * inner), n, inner, max(lo - o * inner, 0), min(hi - o * inner, inner), p)


@njit(nogil=True, cache=True)
def _lp_columns(x, y, norm, b, n, inner, j0, j1, p):
    """Columns j0 .. j1 - 1 of the (n, inner) slab at x[b:]."""
    u0, u1 = U(j0), U(j1)
    for j in range(u0, u1):
        norm[j] = 0
    for k in range(n):
        q = b + U(k) * U(inner)
        if p == 1:
            for j in range(u0, u1):
                norm[j] += abs(x[q + j])
        else:
            for j in range(u0, u1):
                norm[j] += x[q + j] * x[q + j]
    for j in range(u0, u1):
        s = norm[j] if p == 1 else np.sqrt(norm[j])
        norm[j] = 1 / s if s != 0 else 0
    for k in range(n):
        q = b + U(k) * U(inner)
        for j in range(u0, u1):
            y[q + j] = x[q + j] * norm[j]


@register("LpNormalization", infer=_infer_float)
def _prepare_lp_norm(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    axis = normalize_axis(ctx, ctx.attr("axis", -1), len(x.shape))
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise ctx.error(f"p must be 1 or 2, got {p}")
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    k = blocks(ctx, outer * inner, _NS_LP * x.shape[axis])
    return tiled(lp_norm, (outer, x.shape[axis], inner, p), k, (per_block(inner, x.dtype, k),))


# -- MeanVarianceNormalization ----------------------------------------------------------------------


@njit(nogil=True, cache=True)
def mvn(x, y, mean, rstd, shape, so, scale, eps, ds, block_idx, block_dim):
    """y = (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + eps), statistics over the reduced dims of `shape`.
    Blocks split the outermost kept dim ds, as reduce does (reduce.slot_part)."""
    lo, hi, s0, s1 = slot_part(shape, so, ds, mean.size, block_idx, block_dim)
    mean[s0:s1] = 0
    rstd[s0:s1] = 0
    fold(x, mean, mean, SUM, shape, so, ds, lo, hi)
    fold(x, rstd, rstd, SQSUM, shape, so, ds, lo, hi)
    for i in range(s0, s1):
        mu = mean[i] * scale
        var = max(rstd[i] * scale - mu * mu, 0.0)
        mean[i] = mu
        rstd[i] = 1.0 / (np.sqrt(var) + eps)
    if x.size == 0 or hi <= lo:
        return
    sh, si, rows = box(shape, ds, lo, hi)
    r = shape.shape[0]
    n = U(sh[r - 1])
    idx = np.zeros(r, np.int64)
    pi, po = U(lo * si[ds]), U(lo * so[ds])
    for _ in range(rows):
        if so[r - 1]:
            for j in range(n):
                y[pi + j] = (x[pi + j] - mean[po + j]) * rstd[po + j]
        else:
            for j in range(n):
                y[pi + j] = (x[pi + j] - mean[po]) * rstd[po]
        d = r - 2
        while d >= 0:  # the same carry as reduce.fold
            idx[d] += 1
            pi += U(si[d])
            po += U(so[d])
            if idx[d] < sh[d]:
                break
            pi -= U(si[d] * sh[d])
            po -= U(so[d] * sh[d])
            idx[d] = 0
            d -= 1


@register("MeanVarianceNormalization", infer=_infer_float)
def _prepare_mvn(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    rank = len(x.shape)
    axes = ctx.attr("axes", [0, 2, 3])
    axes = {normalize_axis(ctx, a, rank) for a in axes}
    shape, so = collapse(x.shape, axes)
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    slots = int(np.prod([d for a, d in enumerate(x.shape) if a not in axes], dtype=np.int64))
    ws = (TensorSpec((max(slots, 1),), x.dtype),) * 2  # slot-indexed: blocks own disjoint slots
    ds, units = split_dim(shape, so)
    k = blocks(ctx, units, _NS_MVN * x.size / max(units, 1))
    return tiled(mvn, (shape, so, 1.0 / max(count, 1), 1e-9, ds), k, ws)

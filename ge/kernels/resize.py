"""Resize (opsets 10-19) and the deprecated Upsample, as separable per-axis taps.

Resize interpolates each axis independently, so prepare describes every resized axis by a tap table:
output position j reads K input positions idx[j, :] with weights w[j, :] (plus a bias, the
extrapolation value of tf_crop_and_resize, whose weights are then 0). The table follows the ONNX
definition step by step:
  1. the source coordinate x of each output index (coordinate_transformation_mode),
  2. the K weights of the mode at ratio = x - floor(x) (1 when x is a whole number): nearest picks one
     of 2 neighbours (nearest_mode), linear 2, cubic 4, antialias widens linear/cubic by 1/scale,
  3. the window of K neighbours around x, exclude_outside weights renormalized, indices clamped to
     the edge.
Then one of three kernels runs, most specific first:
  - every table picks a single input (nearest, any dtype): strided.gather_axes with offset tables,
  - float data resized only on its last two axes with 2 taps (bilinear NCHW): a fused 2-d loop,
  - otherwise one pass per axis through float64 workspaces, rounding and saturating on the final
    store (integer outputs round half to even, as the reference does).

Blocks (AI cores): nearest splits as strided.gather_axes does; the bilinear kernel splits the
planes * oh output rows (two interpolated-row workspaces per block); the separable kernel splits the
leading dims before the first resized axis, which keeps every pass of a plane inside the plane's stretch
of the workspaces, so a block reads only what it wrote. Measured, 1x64x56x56 to 112x112, one thread vs
2 blocks on 2 threads: nearest 554 -> 346 us, linear 1287 -> 713 us, cubic 11.7 -> 6.3 ms.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .blocks import blocks, own, per_block, tiled
from .registry import KernelContext, Launch, TensorSpec, normalize_axis, register
from .strided import DTYPES, contiguous_strides, gather_args, gather_launch
from .tiling import block_range

# -- kernels ----------------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def _row(x, r, s, xi, xw):
    """r = source row at x[s:] interpolated along the last axis (2 taps per output column)."""
    src = x[s:]  # a view and unsigned offsets skip Numba's negative-index wraparound (strided.copy_run)
    for j in range(r.size):
        r[j] = xw[2 * j] * src[np.uint64(xi[2 * j])] + xw[2 * j + 1] * src[np.uint64(xi[2 * j + 1])]


@njit(nogil=True, cache=True)
def resize_bilinear(x, out, ra, rb, planes, h, w, oh, ow, yi, yw, xi, xw, block_idx, block_dim):
    """2-tap tables on the last two axes: yi/yw hold (index, weight) pairs per output row, xi/xw per column.

    ra and rb (workspaces of ow per block) hold the two source rows already interpolated along the last
    axis; an output row blends them, and the next output row usually reuses them. Blocks split the
    planes * oh output rows (a block starts with no rows held: a row is the same whoever computes it).
    """
    ra, rb = own(ra, ow, block_idx, block_dim), own(rb, ow, block_idx, block_dim)
    r0, r1 = block_range(planes * oh, 1, block_idx, block_dim)
    for p in range(r0 // max(oh, 1), (r1 + oh - 1) // max(oh, 1)):
        src, dst = p * h * w, p * oh * ow
        top = bot = -1  # the source rows held in ra and rb
        for i in range(max(r0 - p * oh, 0), min(r1 - p * oh, oh)):
            y0, y1 = yi[2 * i], yi[2 * i + 1]
            if y0 == bot and y0 != top:  # moving down: the old bottom row is the new top
                ra, rb = rb, ra
                top, bot = bot, top
            if y0 != top:
                _row(x, ra, src + y0 * w, xi, xw)
                top = y0
            if y1 != bot:
                _row(x, rb, src + y1 * w, xi, xw)
                bot = y1
            a0, a1, o = yw[2 * i], yw[2 * i + 1], out[dst + i * ow:dst + (i + 1) * ow]
            for j in range(ow):
                o[j] = a0 * ra[j] + a1 * rb[j]


@njit(nogil=True, cache=True)
def _axis_pass(src, dst, o0, o1, n_in, n_out, inner, k, idx, w, bias):
    """dst[o, j, :] = bias[j] + sum_t w[j, t] * src[o, idx[j, t], :] over (outer, n, inner) views, o in
    [o0, o1)."""
    for o in range(o0, o1):
        s0, d0 = o * n_in * inner, o * n_out * inner
        for j in range(n_out):
            d = dst[d0 + j * inner:d0 + (j + 1) * inner]  # views: see strided.copy_run
            d[:] = bias[j]
            for t in range(k):
                wt, s = w[j * k + t], s0 + idx[j * k + t] * inner
                row = src[s:s + inner]
                for i in range(inner):
                    d[i] += wt * row[i]


@njit(nogil=True, cache=True)
def _store(src, out, i0, i1, lo, hi, rnd):
    """out[i0:i1] = src clipped to [lo, hi] (and rounded half to even for integer outputs); NaN passes."""
    for i in range(i0, i1):
        v = np.rint(src[i]) if rnd else src[i]
        if v < lo:
            v = lo
        elif v > hi:
            v = hi
        out[i] = v


@njit(nogil=True, cache=True)
def resize_separable(x, out, ws_a, ws_b, plan, idx, w, bias, lo, hi, rnd, planes, block_idx, block_dim):
    """One _axis_pass per row of plan (outer, n_in, n_out, inner, k, table offset, bias offset).

    Blocks split the `planes` leading dims no pass resizes: every pass keeps a plane's data in the
    plane's own stretch of each buffer, so a block reads only what it wrote."""
    q0, q1 = block_range(planes, 1, block_idx, block_dim)
    for p in range(plan.size // 7):
        outer, n_in, n_out, inner, k, t, b = plan[7 * p:7 * p + 7]
        tab = slice(t, t + n_out * k)
        o0, o1 = q0 * (outer // planes), q1 * (outer // planes)
        if p == 0:
            _axis_pass(x, ws_a, o0, o1, n_in, n_out, inner, k, idx[tab], w[tab], bias[b:b + n_out])
        else:
            _axis_pass(ws_a, ws_b, o0, o1, n_in, n_out, inner, k, idx[tab], w[tab], bias[b:b + n_out])
            ws_a, ws_b = ws_b, ws_a
    per = out.size // max(planes, 1)
    _store(ws_a, out, q0 * per, q1 * per, lo, hi, rnd)


# -- tap tables (Python, at prepare time) -----------------------------------------------------------

COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_crop_and_resize", "tf_half_pixel_for_nn")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")


def _source_coords(mode, n_in, n_out, scale, roi):
    """Source coordinate of every output index, and the mask of positions outside the crop (or None)."""
    y = np.arange(n_out, dtype=np.float64)
    width = scale * n_in  # the reference uses the unrounded output length
    if mode == "align_corners":
        return (np.zeros(n_out) if width == 1 else y * (n_in - 1) / (width - 1)), None
    if mode == "asymmetric":
        return y / scale, None
    if mode == "tf_crop_and_resize":
        lo, hi = roi
        x = np.full(n_out, (hi - lo) * (n_in - 1) / 2) if width == 1 else y * (hi - lo) * (n_in - 1) / (width - 1)
        x = x + lo * (n_in - 1)
        return x, (x < 0) | (x > n_in - 1)
    if mode == "pytorch_half_pixel":
        return (np.full(n_out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5), None
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5, None
    if mode == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / width)
        return offset + (y + 0.5) / scale - 0.5, None
    # tf_half_pixel_for_nn (opset 11-12, TensorFlow's nearest): in float32 as onnxruntime computes it, so a
    # tie such as 1.5 / 0.6 is 2.5 (round_prefer_ceil takes 3), not float64's 2.4999999
    return ((y.astype(np.float32) + np.float32(0.5)) / np.float32(scale)).astype(np.float64), None


def _cubic(d, a):
    """Keys' cubic convolution kernel at distances d."""
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _weights(ratio, scale, o):
    """(tap offsets i, weights[n_out, K]): tap i sits at floor-ish(x) + i, at distance i - ratio."""
    r = ratio[:, None]
    if o["mode"] == "nearest":
        nm = o["nearest_mode"]
        if nm == "simple":  # opset < 11 and Upsample: floor when enlarging, ceil when shrinking
            nm = "ceil" if scale < 1 else "floor"
        hi = {"round_prefer_floor": r > 0.5, "round_prefer_ceil": r >= 0.5,
              "floor": np.zeros_like(r, bool), "ceil": np.ones_like(r, bool)}[nm] | (r == 1)
        return np.arange(2), np.concatenate([~hi, hi], axis=1).astype(np.float64)
    if o["mode"] == "linear":
        s = min(scale, 1.0) if o["antialias"] else 1.0
        start = math.floor(-1 / s) + 1
        i = np.arange(start, 2 - start)
        w = np.clip(1 - np.abs((i - r) * s), 0, 1)
    else:
        s = min(scale, 1.0) if o["antialias"] else 1.0
        start = math.floor(-2 / s) + 1
        i = np.arange(start, 2 - start)
        w = _cubic((i - r) * s, o["cubic_coeff_a"])
    return i, w / w.sum(axis=1, keepdims=True)


def axis_taps(n_in, n_out, scale, roi, o):
    """(idx[n_out, K] clamped, weights[n_out, K], bias[n_out] or None) for one resized axis."""
    x, outside = _source_coords(o["coord"], n_in, n_out, scale, roi)
    fl = np.floor(x)
    ratio = np.where(x == fl, 1.0, x - fl)
    i, w = _weights(ratio, scale, o)
    # taps sit at floor(x) + i, one lower when x is whole (the reference prefers the left neighbours)
    idx = fl.astype(np.int64)[:, None] + i[None, :] - (x == fl)[:, None]
    if o["exclude_outside"]:
        w = np.where((idx < 0) | (idx >= n_in), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    bias = None
    if outside is not None and outside.any():
        w = np.where(outside[:, None], 0.0, w)
        bias = np.where(outside, o["extrapolation_value"], 0.0)
    return np.clip(idx, 0, n_in - 1), w, bias


# -- Resize / Upsample ------------------------------------------------------------------------------

def _options(ctx: KernelContext) -> dict:
    legacy = ctx.op_type == "Upsample" or ctx.opset < 11  # asymmetric coordinates, floor/ceil nearest
    mode = {"bilinear": "linear"}.get(ctx.attr("mode", "nearest"), ctx.attr("mode", "nearest"))
    coord = "asymmetric" if legacy else ctx.attr("coordinate_transformation_mode", "half_pixel")
    nearest = "simple" if legacy else ctx.attr("nearest_mode", "round_prefer_floor")
    if mode not in ("nearest", "linear", "cubic") or coord not in COORDINATE_MODES or nearest not in NEAREST_MODES:
        raise ctx.error(f"unsupported mode {mode!r}, coordinate_transformation_mode {coord!r} or "
                        f"nearest_mode {nearest!r}")
    return {"mode": mode, "coord": coord, "nearest_mode": nearest,
            "cubic_coeff_a": float(ctx.attr("cubic_coeff_a", -0.75)),
            "exclude_outside": bool(ctx.attr("exclude_outside", 0)),
            "extrapolation_value": float(ctx.attr("extrapolation_value", 0.0)),
            "antialias": bool(ctx.attr("antialias", 0))}


def _given(ctx: KernelContext, i: int) -> np.ndarray | None:
    """Value of optional input i, None when absent or empty (older models pass empty tensors)."""
    if not ctx.has(i):
        return None
    v = np.asarray(ctx.value(i)).reshape(-1)
    return v if v.size else None


def _plan(ctx: KernelContext):
    """(output shape, scale per dim, roi (lo, hi) per dim) after axes and keep_aspect_ratio_policy."""
    shape = ctx.inputs[0].shape
    r = len(shape)
    roi = sizes = None
    if ctx.op_type == "Upsample":
        scales = _given(ctx, 1) if ctx.opset >= 9 else None if ctx.attr("scales") is None else \
            np.asarray(ctx.attr("scales"), np.float32)
    elif ctx.opset < 11:
        scales = _given(ctx, 1)
    else:
        roi, scales, sizes = _given(ctx, 1), _given(ctx, 2), _given(ctx, 3)
    axes = ctx.attr("axes")
    axes = list(range(r)) if axes is None else [normalize_axis(ctx, a, r) for a in axes]
    given = scales if sizes is None else sizes
    if (scales is None) == (sizes is None) or len(given) != len(axes):
        raise ctx.error(f"needs scales or sizes (one value per axis of {axes}), got {scales}, {sizes}")
    out, scale = list(shape), [1.0] * r
    if sizes is None:
        for a, s in zip(axes, scales):
            if not s > 0:
                raise ctx.error(f"scales must be positive, got {scales}")
            scale[a], out[a] = float(s), int(float(s) * shape[a])
    else:
        for a, n in zip(axes, sizes):
            scale[a], out[a] = int(n) / shape[a], int(n)
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        if policy not in ("stretch", "not_larger", "not_smaller"):
            raise ctx.error(f"unsupported keep_aspect_ratio_policy {policy!r}")
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(scale[a] for a in axes)
            for a in axes:
                scale[a], out[a] = s, int(s * shape[a] + 0.5)
    lohi = [(0.0, 1.0)] * r
    if roi is not None:
        if len(roi) != 2 * len(axes):
            raise ctx.error(f"roi {roi} does not fit axes {axes}")
        for i, a in enumerate(axes):
            lohi[a] = (float(roi[i]), float(roi[len(axes) + i]))
    return out, scale, lohi


def _infer_resize(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, DTYPES)
    _options(ctx)
    return [TensorSpec(_plan(ctx)[0], ctx.inputs[0].dtype)]


def _one_hot_rows(w) -> bool:
    return bool(np.all((w == 0) | (w == 1)) and np.all(w.sum(axis=1) == 1))


# ns, one thread, float32 (blocks.MIN_BLOCK_NS): per bilinear output (1x16x56x56 x2: 1.5), per tap of a
# separable pass (cubic 1x4x56x56 x2: 2.5)
_NS_BILINEAR, _NS_TAP = 1.5, 2.5


@register(["Resize", "Upsample"], infer=_infer_resize, value_inputs=(1, 2, 3))
def _prepare_resize(ctx: KernelContext) -> Launch:
    shape = ctx.inputs[0].shape
    o = _options(ctx)
    out, scale, lohi = _plan(ctx)
    crop = o["coord"] == "tf_crop_and_resize"
    taps = {a: axis_taps(shape[a], out[a], scale[a], lohi[a], o) for a in range(len(shape))
            if not (math.isclose(scale[a], 1.0) and out[a] == shape[a] and (not crop or lohi[a] == (0.0, 1.0)))}
    if all(b is None and _one_hot_rows(w) for _, w, b in taps.values()):
        return _nearest_launch(ctx, shape, out, taps)
    r = len(shape)
    if (ctx.inputs[0].dtype.kind == "f" and r >= 2 and set(taps) <= {r - 2, r - 1}
            and all(b is None and w.shape[1] == 2 for _, w, b in taps.values())):
        return _bilinear_launch(ctx, shape, out, taps)
    if ctx.inputs[0].dtype.kind not in "iuf":
        raise ctx.error(f"{o['mode']} interpolation needs numeric data, got {ctx.inputs[0].dtype}")
    return _separable_launch(ctx, shape, out, taps, ctx.inputs[0].dtype)


def _nearest_launch(ctx, shape, out, taps) -> Launch:
    """Every axis reads one input per output: an offset table per axis for gather_axes."""
    st = contiguous_strides(shape)
    tables = [(taps[a][0][np.arange(out[a]), taps[a][1].argmax(axis=1)] if a in taps else np.arange(out[a]))
              * st[a] for a in range(len(shape))]
    return gather_launch(ctx, gather_args(out, tables), inputs=(0,))


def _bilinear_launch(ctx, shape, out, taps) -> Launch:
    """2 taps on (at most) the last two axes; an untouched one of them gets identity taps."""
    pairs = []
    for a in (len(shape) - 2, len(shape) - 1):
        idx, w, _ = taps.get(a) or (np.repeat(np.arange(out[a]), 2).reshape(-1, 2),
                                    np.tile([1.0, 0.0], (out[a], 1)), None)
        pairs += [idx.reshape(-1).astype(np.int64), w.reshape(-1).astype(np.float64)]
    planes = math.prod(shape[:-2])
    nb = blocks(ctx, planes * out[-2], _NS_BILINEAR * out[-1])
    rows = (per_block(out[-1], np.float64, nb),) * 2  # two rows per block
    return tiled(resize_bilinear, (planes, shape[-2], shape[-1], out[-2], out[-1], *pairs), nb, rows,
                 inputs=(0,))


def _separable_launch(ctx, shape, out, taps, dtype) -> Launch:
    """One pass per resized axis, ping-ponging between two float64 workspaces; blocks split the leading
    dims before the first resized axis."""
    plan, idxs, ws, biases, sizes, cur = [], [], [], [], [0, 0], list(shape)
    t = b = 0
    for p, a in enumerate(sorted(taps)):
        idx, w, bias = taps[a]
        plan += [math.prod(cur[:a]), cur[a], out[a], math.prod(cur[a + 1:]), w.shape[1], t, b]
        cur[a] = out[a]
        sizes[p % 2] = max(sizes[p % 2], math.prod(cur))
        idxs.append(idx.reshape(-1))
        ws.append(w.reshape(-1))
        biases.append(np.zeros(out[a]) if bias is None else bias)
        t, b = t + idx.size, b + out[a]
    info = np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype)
    planes = math.prod(shape[:min(taps)]) if taps else 1
    ns = sum(plan[7 * p] * plan[7 * p + 2] * plan[7 * p + 3] * plan[7 * p + 4] for p in range(len(plan) // 7))
    nb = blocks(ctx, planes, _NS_TAP * ns / max(planes, 1))
    args = (np.array(plan, np.int64), np.concatenate(idxs).astype(np.int64), np.concatenate(ws).astype(np.float64),
            np.concatenate(biases).astype(np.float64), float(info.min), float(info.max), int(dtype.kind in "iu"),
            planes)
    work = tuple(TensorSpec((max(n, 1),), np.float64) for n in sizes)
    return tiled(resize_separable, args, nb, work, inputs=(0,))

"""Sampling at computed coordinates: GridSample (2-D and 3-D), AffineGrid, RoiAlign.

- GridSample: an output point's grid entry is denormalized per spatial axis (align_corners: -1..1 spans the
  first to the last pixel's centre; otherwise their outer edges), and the coordinate is clamped (border) or
  reflected (reflection) when it leaves the bounds, as the spec's reference does. Its taps (1 nearest,
  2 linear, 4 cubic per axis, Keys' A = -0.75) are fetched with the padding applied per index (zeros: a tap
  off the map reads 0), and the weights are a product over axes, so one loop serves 2-D and 3-D. Nearest
  rounds half to even before the padding, then truncates (the reference's order). Weights and sums are
  float64, stored once in the output's type. The weights depend only on the point, so a point computes
  every channel.
- AffineGrid: grid[n, ...] = theta[n] @ (x, y[, z], 1) over the base grid of normalized pixel centres; the
  size is input 1's value.
- RoiAlign: per region, bin and sample the bilinear weights of the four neighbours (a sample outside
  [-1, size] contributes 0; avg divides by the sample count, max takes the largest weighted term, as
  onnxruntime and the reference do).

Blocks (AI cores): GridSample splits the N x points output points, RoiAlign the regions, AffineGrid runs
as one block (it is a few multiply-adds a point).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .blocks import blocks, tiled
from .registry import KernelContext, Launch, TensorSpec, register
from .strided import int_values
from .tiling import block_range

FLOATS = (np.float32, np.float64)
_MODES = {"nearest": 0, "linear": 1, "bilinear": 1, "cubic": 2, "bicubic": 2}
_PADDING = {"zeros": 0, "border": 1, "reflection": 2}


@njit(nogil=True, cache=True)
def _reflect(x, lo, hi):
    """x folded into [lo, hi] by reflecting at the nearer bound until it is inside."""
    rng = hi - lo
    if rng <= 0.0:
        return lo
    if x < lo:
        d = lo - x
        n = int(d / rng)
        r = d - n * rng
        return lo + r if n % 2 == 0 else hi - r
    if x > hi:
        d = x - hi
        n = int(d / rng)
        r = d - n * rng
        return hi - r if n % 2 == 0 else lo + r
    return x


@njit(nogil=True, cache=True)
def _cubic(t, w):
    a = -0.75
    for k in range(4):
        s = abs(t - (k - 1))
        if s <= 1.0:
            w[k] = ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0
        else:
            w[k] = ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a


@njit(nogil=True, cache=True)
def grid_sample(x, grid, out, dims, points, channels, mode, padding, align, block_idx, block_dim):
    """out[n, c, p] = x[n, c] sampled at grid[n, p, :] (reversed: its last component is the innermost axis)."""
    d = dims.size
    taps = 1 if mode == 0 else 2 * mode  # per axis
    idx = np.empty((d, taps), np.int64)
    wt = np.empty((d, taps), np.float64)
    ok = np.empty((d, taps), np.bool_)
    cw = np.empty(4, np.float64)
    strides = np.empty(d, np.int64)
    plane = 1
    for i in range(d - 1, -1, -1):
        strides[i] = plane
        plane *= dims[i]
    batch = out.size // max(channels * points, 1)
    p0, p1 = block_range(batch * points, 1, block_idx, block_dim)
    for q in range(p0, p1):
        n, p = q // points, q % points
        for i in range(d):
            size = dims[i]
            g = np.float64(grid[q * d + d - 1 - i])
            v = (g + 1.0) / 2.0 * (size - 1) if align else ((g + 1.0) * size - 1.0) / 2.0
            lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
            if mode == 0:
                v = np.rint(v)
            if v < lo or v > hi:
                if padding == 1:
                    v = min(max(v, 0.0), size - 1.0)
                elif padding == 2:
                    v = _reflect(v, lo, hi)
            if mode == 0:
                idx[i, 0], wt[i, 0] = int(v), 1.0
            else:
                f = math.floor(v)
                t = v - f
                if mode == 1:
                    wt[i, 0], wt[i, 1] = 1.0 - t, t
                else:
                    _cubic(t, cw)
                    wt[i, :] = cw
                first = int(f) - (0 if mode == 1 else 1)
                for k in range(taps):
                    idx[i, k] = first + k
            for k in range(taps):  # the padding of each tap's index
                j = idx[i, k]
                ok[i, k] = True
                if j < 0 or j >= size:
                    if padding == 0:
                        ok[i, k] = False
                    elif padding == 1:
                        idx[i, k] = min(max(j, 0), size - 1)
                    else:
                        idx[i, k] = int(_reflect(np.float64(j), lo, hi))
        for c in range(channels):
            base = (n * channels + c) * plane
            acc = 0.0
            for combo in range(taps ** d):
                r, off, w = combo, 0, 1.0
                for i in range(d - 1, -1, -1):  # combo's tap on each axis, innermost first
                    k = r % taps
                    r //= taps
                    if not ok[i, k]:
                        w = 0.0
                        break
                    w *= wt[i, k]
                    off += idx[i, k] * strides[i]
                if w != 0.0:
                    acc += w * x[base + off]
            out[(n * channels + c) * points + p] = acc


def _infer_grid_sample(ctx: KernelContext) -> list[TensorSpec]:
    x, grid = ctx.inputs[0], ctx.inputs[1]
    ctx.require_dtype(0, FLOATS)
    ctx.require_dtype(1, (x.dtype,))
    r = len(x.shape)
    if r not in (4, 5) or len(grid.shape) != r or grid.shape[0] != x.shape[0] or grid.shape[-1] != r - 2:
        raise ctx.error(f"needs X (N, C, spatial...) of rank 4 or 5 and grid (N, out spatial..., {r - 2}); "
                        f"got X {x.shape}, grid {grid.shape}")
    _modes(ctx)
    return [TensorSpec(x.shape[:2] + grid.shape[1:-1], x.dtype)]


def _modes(ctx: KernelContext):
    mode, padding = ctx.attr("mode", "linear" if ctx.opset >= 20 else "bilinear"), ctx.attr("padding_mode", "zeros")
    mode, padding = (s.decode() if isinstance(s, bytes) else s for s in (mode, padding))
    if mode not in _MODES or padding not in _PADDING:
        raise ctx.error(f"mode '{mode}' / padding_mode '{padding}': supported are {sorted(_MODES)} and "
                        f"{sorted(_PADDING)}")
    return _MODES[mode], _PADDING[padding]


@register("GridSample", infer=_infer_grid_sample, since=16)
def _prepare_grid_sample(ctx: KernelContext) -> Launch:
    x, grid = ctx.inputs[0], ctx.inputs[1]
    mode, padding = _modes(ctx)
    points = math.prod(grid.shape[1:-1])
    taps = (1, 2, 4)[mode] ** (len(x.shape) - 2)
    nb = blocks(ctx, x.shape[0] * points, 2.0 * taps * x.shape[1])
    args = (np.array(x.shape[2:], np.int64), points, x.shape[1], mode, padding, int(bool(ctx.attr("align_corners", 0))))
    return tiled(grid_sample, args, nb)


# -- AffineGrid -------------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def affine_grid(theta, out, dims, align):
    """out[n, p, :] = theta[n] (d x (d+1)) @ (base coordinates of p, innermost axis first, 1)."""
    d = dims.size
    points = 1
    for i in range(d):
        points *= dims[i]
    base = np.empty(d, np.float64)
    for q in range(out.size // d):
        n, p = q // points, q % points
        r = p
        for i in range(d):  # base[i]: axis d-1-i, innermost first (x, y, z)
            size = dims[d - 1 - i]
            j = r % size
            r //= size
            if align:
                base[i] = -1.0 + 2.0 * j / (size - 1) if size > 1 else 0.0
            else:
                base[i] = (2.0 * j + 1.0) / size - 1.0
        for k in range(d):
            row = (n * d + k) * (d + 1)
            acc = np.float64(theta[row + d])
            for i in range(d):
                acc += theta[row + i] * base[i]
            out[q * d + k] = acc


def _infer_affine_grid(ctx: KernelContext) -> list[TensorSpec]:
    theta = ctx.inputs[0]
    ctx.require_dtype(0, FLOATS)
    size = int_values(ctx, 1)
    d = len(size) - 2
    if d not in (2, 3) or theta.shape != (size[0], d, d + 1) or min(size) < 0:
        raise ctx.error(f"needs size (N, C, H, W) or (N, C, D, H, W) and theta (N, {d}, {d + 1}); got size "
                        f"{size}, theta {theta.shape}")
    return [TensorSpec((size[0], *size[2:], d), theta.dtype)]


@register("AffineGrid", infer=_infer_affine_grid, value_inputs=(1,), since=20)
def _prepare_affine_grid(ctx: KernelContext) -> Launch:
    return Launch(affine_grid, (np.array(int_values(ctx, 1)[2:], np.int64), int(bool(ctx.attr("align_corners", 0)))),
                  inputs=(0,))


# -- RoiAlign ---------------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def roi_align(x, rois, batch, out, channels, height, width, oh, ow, sampling, scale, half_pixel, use_max,
              block_idx, block_dim):
    r0, r1 = block_range(batch.size, 1, block_idx, block_dim)
    for r in range(r0, r1):
        off = 0.5 if half_pixel else 0.0
        x0, y0 = rois[r * 4] * scale - off, rois[r * 4 + 1] * scale - off
        rw, rh = rois[r * 4 + 2] * scale - off - x0, rois[r * 4 + 3] * scale - off - y0
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = sampling if sampling > 0 else int(math.ceil(rh / oh))
        gw = sampling if sampling > 0 else int(math.ceil(rw / ow))
        count = max(gh * gw, 1)
        b = np.int64(batch[r])
        for c in range(channels):
            src = (b * channels + c) * height * width
            for ph in range(oh):
                for pw in range(ow):
                    acc, first = 0.0, True
                    for iy in range(gh):
                        yy = y0 + ph * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            xx = x0 + pw * bw + (ix + 0.5) * bw / gw
                            v = 0.0
                            if not (yy < -1.0 or yy > height or xx < -1.0 or xx > width):
                                y, xq = max(yy, 0.0), max(xx, 0.0)
                                yl, xl = int(y), int(xq)
                                if yl >= height - 1:
                                    yl = yh = height - 1
                                    y = np.float64(yl)
                                else:
                                    yh = yl + 1
                                if xl >= width - 1:
                                    xl = xh = width - 1
                                    xq = np.float64(xl)
                                else:
                                    xh = xl + 1
                                ly, lx = y - yl, xq - xl
                                t1 = (1 - ly) * (1 - lx) * x[src + yl * width + xl]
                                t2 = (1 - ly) * lx * x[src + yl * width + xh]
                                t3 = ly * (1 - lx) * x[src + yh * width + xl]
                                t4 = ly * lx * x[src + yh * width + xh]
                                v = max(max(t1, t2), max(t3, t4)) if use_max else t1 + t2 + t3 + t4
                            if not use_max:
                                acc += v
                            elif first or v > acc:
                                acc = v
                            first = False
                    out[((r * channels + c) * oh + ph) * ow + pw] = acc if use_max else acc / count


def _infer_roi_align(ctx: KernelContext) -> list[TensorSpec]:
    x, rois, batch = ctx.inputs
    ctx.require_dtype(0, FLOATS)
    ctx.require_dtype(1, (x.dtype,))
    ctx.require_dtype(2, (np.int64,))
    if len(x.shape) != 4 or len(rois.shape) != 2 or rois.shape[1] != 4 or batch.shape != (rois.shape[0],):
        raise ctx.error(f"needs X (N, C, H, W), rois (R, 4), batch_indices (R,); got {x.shape}, {rois.shape}, "
                        f"{batch.shape}")
    return [TensorSpec((rois.shape[0], x.shape[1], ctx.attr("output_height", 1), ctx.attr("output_width", 1)),
                       x.dtype)]


@register("RoiAlign", infer=_infer_roi_align, since=10)
def _prepare_roi_align(ctx: KernelContext) -> Launch:
    x, rois = ctx.inputs[0], ctx.inputs[1]
    mode, ctm = (s.decode() if isinstance(s, bytes) else s for s in (
        ctx.attr("mode", "avg"), ctx.attr("coordinate_transformation_mode", "half_pixel" if ctx.opset >= 16
                                          else "output_half_pixel")))
    if mode not in ("avg", "max") or ctm not in ("half_pixel", "output_half_pixel"):
        raise ctx.error(f"mode '{mode}', coordinate_transformation_mode '{ctm}' are not RoiAlign's")
    _, c, h, w = x.shape
    oh, ow = ctx.outputs[0].shape[2:]
    nb = blocks(ctx, rois.shape[0], 20.0 * c * oh * ow)
    args = (c, h, w, oh, ow, int(ctx.attr("sampling_ratio", 0)), float(ctx.attr("spatial_scale", 1.0)),
            int(ctm == "half_pixel"), int(mode == "max"))
    return tiled(roi_align, args, nb)

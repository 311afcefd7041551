"""Ops on sliding patches of an image: Col2Im, DeformConv, MaxUnpool.

- Col2Im (any number of spatial axes): the inverse of im2col. Column (c, kernel offset) at block l adds
  into pixel l * stride - pad_begin + offset * dilation when it falls inside the image; the block and
  offset multi-indices are walked as odometers.
- DeformConv (2-D): each kernel tap samples X at its regular position plus its learned offset (of the
  tap's offset group), bilinearly with zeros outside (GridSample's linear, zeros, align_corners=1, which
  the spec's reference calls), times the mask; then the grouped convolution sum and the bias. A direct
  loop in float64: the node cases and detection heads are small; an im2col + GEMM form is the way to
  speed when a model needs it.
- MaxUnpool: MaxPool's indices address the unpooled shape (x.shape - 1) * strides - pads + kernel; with
  output_shape given that frame sits at the output's origin, as the reference places it.
One block each.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .registry import KernelContext, Launch, TensorSpec, register
from .strided import DTYPES, int_values

FLOATS = (np.float32, np.float64)


@njit(nogil=True, cache=True)
def col2im(x, out, image, kernel, blocks, strides, pads, dilations, batch, channels):
    d = image.size
    kvol, lvol, pix = 1, 1, 1
    for i in range(d):
        kvol *= kernel[i]
        lvol *= blocks[i]
        pix *= image[i]
    out[:] = 0
    kk, ll = np.zeros(d, np.int64), np.zeros(d, np.int64)
    for n in range(batch):
        for c in range(channels):
            for k in range(kvol):
                r = k
                for i in range(d - 1, -1, -1):
                    kk[i] = r % kernel[i]
                    r //= kernel[i]
                src = ((n * channels + c) * kvol + k) * lvol
                for l in range(lvol):
                    r = l
                    for i in range(d - 1, -1, -1):
                        ll[i] = r % blocks[i]
                        r //= blocks[i]
                    pos, inside = 0, True
                    for i in range(d):
                        p = ll[i] * strides[i] - pads[i] + kk[i] * dilations[i]
                        if p < 0 or p >= image[i]:
                            inside = False
                            break
                        pos = pos * image[i] + p
                    if inside:
                        out[(n * channels + c) * pix + pos] += x[src + l]


def _col2im_view(ctx: KernelContext):
    """(image, kernel, blocks, strides, pads, dilations, batch, channels) as int64 arrays and ints."""
    x = ctx.inputs[0]
    ctx.require_dtype(0, DTYPES)
    image, kernel = int_values(ctx, 1), int_values(ctx, 2)
    d = len(image)
    strides, dilations = ctx.attr("strides", [1] * d), ctx.attr("dilations", [1] * d)
    pads = ctx.attr("pads", [0] * 2 * d)
    if len(x.shape) != 3 or len(kernel) != d or len(strides) != d or len(dilations) != d or len(pads) != 2 * d:
        raise ctx.error(f"needs input (N, C x prod(block_shape), L) and image_shape, block_shape, strides, "
                        f"dilations of one length (pads twice it); got input {x.shape}, image_shape {image}, "
                        f"block_shape {kernel}")
    kvol = math.prod(kernel)
    blocks = [(image[i] + pads[i] + pads[d + i] - dilations[i] * (kernel[i] - 1) - 1) // strides[i] + 1
              for i in range(d)]
    if kvol < 1 or x.shape[1] % kvol or min(blocks) < 1 or math.prod(blocks) != x.shape[2]:
        raise ctx.error(f"input {x.shape} does not hold {kvol}-element blocks at {blocks} positions")
    arr = lambda v: np.array(v, np.int64)  # noqa: E731
    return (arr(image), arr(kernel), arr(blocks), arr(strides), arr(pads[:d]), arr(dilations), x.shape[0],
            x.shape[1] // kvol)


def _infer_col2im(ctx: KernelContext) -> list[TensorSpec]:
    v = _col2im_view(ctx)
    return [TensorSpec((v[6], v[7], *v[0]), ctx.inputs[0].dtype)]


@register("Col2Im", infer=_infer_col2im, value_inputs=(1, 2), since=18)
def _prepare_col2im(ctx: KernelContext) -> Launch:
    return Launch(col2im, _col2im_view(ctx), inputs=(0,))


# -- DeformConv -------------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def _bilinear(x, base, h, w, y, xq):
    """x[base + (y, xq)] bilinearly, taps outside the h x w plane reading 0."""
    y0, x0 = math.floor(y), math.floor(xq)
    ty, tx = y - y0, xq - x0
    acc = 0.0
    for a in range(2):
        for b in range(2):
            r, c = int(y0) + a, int(x0) + b
            if 0 <= r < h and 0 <= c < w:
                acc += (ty if a else 1.0 - ty) * (tx if b else 1.0 - tx) * x[base + r * w + c]
    return acc


@njit(nogil=True, cache=True)
def deform_conv(x, wt, offset, bias, mask, out, dims, has_bias, has_mask):
    n_, c_, h, w, oc, kh, kw, oh, ow = dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], dims[7], dims[8]
    sh, sw, ph, pw, dh, dw, group, ogroup = dims[9], dims[10], dims[11], dims[12], dims[13], dims[14], dims[15], dims[16]
    cg, ocg, cog = c_ // group, oc // group, c_ // ogroup
    taps = kh * kw
    for n in range(n_):
        for o in range(oc):
            g = o // ocg
            for i in range(oh):
                for j in range(ow):
                    acc = np.float64(bias[o]) if has_bias else 0.0
                    for ci in range(cg):
                        c = g * cg + ci
                        og = c // cog
                        for ki in range(kh):
                            for kj in range(kw):
                                t = ki * kw + kj
                                oo = ((n * ogroup + og) * taps + t) * 2
                                dy = offset[(oo * oh + i) * ow + j]
                                dx = offset[((oo + 1) * oh + i) * ow + j]
                                v = _bilinear(x, (n * c_ + c) * h * w, h, w, i * sh - ph + ki * dh + dy,
                                              j * sw - pw + kj * dw + dx)
                                if has_mask:
                                    v *= mask[(((n * ogroup + og) * taps + t) * oh + i) * ow + j]
                                acc += v * wt[((o * cg + ci) * kh + ki) * kw + kj]
                    out[((n * oc + o) * oh + i) * ow + j] = acc


def _deform_dims(ctx: KernelContext) -> tuple:
    x, wt, off = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    ctx.require_dtype(0, FLOATS)
    for i in range(1, 5):
        if ctx.has(i):
            ctx.require_dtype(i, (x.dtype,))
    if len(x.shape) != 4 or len(wt.shape) != 4 or len(off.shape) != 4:
        raise ctx.error(f"ge runs 2-D DeformConv (X of rank 4), got X {x.shape}, W {wt.shape}")
    n, c, h, w = x.shape
    oc, _, kh, kw = wt.shape
    sh, sw = ctx.attr("strides", [1, 1])
    dh, dw = ctx.attr("dilations", [1, 1])
    pt, pl, pb, pr = ctx.attr("pads", [0, 0, 0, 0])
    group, ogroup = ctx.attr("group", 1), ctx.attr("offset_group", 1)
    oh = (h + pt + pb - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + pl + pr - (dw * (kw - 1) + 1)) // sw + 1
    if tuple(ctx.attr("kernel_shape", [kh, kw])) != (kh, kw) or c != wt.shape[1] * group or oc % group or \
            c % ogroup or off.shape != (n, ogroup * 2 * kh * kw, oh, ow) or \
            (ctx.has(3) and ctx.inputs[3].shape != (oc,)) or \
            (ctx.has(4) and ctx.inputs[4].shape != (n, ogroup * kh * kw, oh, ow)):
        raise ctx.error(f"inconsistent shapes: X {x.shape}, W {wt.shape}, offset {off.shape}, group {group}, "
                        f"offset_group {ogroup}, output {oh}x{ow}")
    return n, c, h, w, oc, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw, group, ogroup


def _infer_deform(ctx: KernelContext) -> list[TensorSpec]:
    d = _deform_dims(ctx)
    return [TensorSpec((d[0], d[4], d[7], d[8]), ctx.inputs[0].dtype)]


@register("DeformConv", infer=_infer_deform, since=19)
def _prepare_deform(ctx: KernelContext) -> Launch:
    dims = np.array(_deform_dims(ctx), np.int64)
    # absent bias or mask: input 0 stands in (never read), so one specialization serves every case
    inputs = (0, 1, 2, 3 if ctx.has(3) else 0, 4 if ctx.has(4) else 0)
    return Launch(deform_conv, (dims, int(ctx.has(3)), int(ctx.has(4))), inputs=inputs)


# -- MaxUnpool --------------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def max_unpool(x, idx, out, frame, shape):
    """out = zeros; the value x[k] at frame position idx[k], the frame at the origin of out's shape."""
    out[:] = 0
    d = frame.size
    total = 1
    for i in range(d):
        total *= frame[i]
    for k in range(x.size):
        r = np.int64(idx[k])
        if r < 0 or r >= total:
            raise IndexError("MaxUnpool index out of range")
        pos, stride = 0, 1
        for i in range(d - 1, -1, -1):
            pos += (r % frame[i]) * stride
            r //= frame[i]
            stride *= shape[i]
        out[pos] = x[k]


def _unpool_shapes(ctx: KernelContext):
    x = ctx.inputs[0]
    ctx.require_dtype(0, DTYPES)
    ctx.require_dtype(1, (np.int64,))
    ks = ctx.attr("kernel_shape")
    d = len(x.shape) - 2
    strides, pads = ctx.attr("strides", [1] * d), ctx.attr("pads", [0] * 2 * d)
    if ks is None or len(ks) != d or ctx.inputs[1].shape != x.shape:
        raise ctx.error(f"needs kernel_shape for {d} axes and indices shaped as X {x.shape}")
    frame = (*x.shape[:2], *((x.shape[2 + i] - 1) * strides[i] - pads[i] - pads[d + i] + ks[i] for i in range(d)))
    shape = tuple(int_values(ctx, 2)) if ctx.has(2) else frame
    if len(shape) != len(frame) or any(s < f for s, f in zip(shape, frame)):
        raise ctx.error(f"output_shape {shape} is smaller than the unpooled shape {frame}")
    return frame, shape


def _infer_unpool(ctx: KernelContext) -> list[TensorSpec]:
    return [TensorSpec(_unpool_shapes(ctx)[1], ctx.inputs[0].dtype)]


@register("MaxUnpool", infer=_infer_unpool, value_inputs=(2,), since=9)
def _prepare_unpool(ctx: KernelContext) -> Launch:
    frame, shape = _unpool_shapes(ctx)
    return Launch(max_unpool, (np.array(frame, np.int64), np.array(shape, np.int64)), inputs=(0, 1))

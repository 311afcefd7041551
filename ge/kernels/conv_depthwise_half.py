"""DEPTHWISE on a 16-bit feature map: a depthwise conv whose input, residual Z and output are float16 or
bfloat16 (uint16 bits), weights, bias and sums float32.

Without it a depthwise conv under allow_mix_precision reads a float32 copy of its 16-bit input and writes a
float32 result that a Cast rounds: both full-size float32 tensors live around it, and on ShuffleNet (a
depthwise conv in every unit) the Cast before the first one was the planned feature map's peak (0.71x
float32's; 0.50x with this kernel). Here one plane at a time: its input widened into float32 scratch, the
float32 kernel (conv_depthwise.depthwise) on it into float32 scratch planes, bias, Z and the activation
added there as that kernel does, then rounded once to 16 bits. The float32 kernel sees the same values in
the same order, so the bits are those of the float32 conv between Casts, whatever the blocks (pairs of image
and group, as the float32 conv splits them).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .conv_depthwise import depthwise
from . import conv_geom as cg
from .half import BF16, F16, narrow_run, widen_run
from .registry import KernelContext, Launch, TensorSpec
from .tiling import block_range


@njit(nogil=True, cache=True)
def depthwise16(x, w, b, z, y, ws, geom, kind, has_b, has_z, act, p0, p1, tile, lw, block_idx, block_dim):
    """y = act(depthwise(x, w) + b + z) on 16-bit x, z, y: block block_idx's pairs (image, group). A block's
    workspace: depthwise's padded rows (lw), one input plane, Mg output planes (and Mg of Z)."""
    N, C, H, W = geom[cg.N], geom[cg.C], geom[cg.H], geom[cg.W]
    M, OH, OW = geom[cg.M], geom[cg.OH], geom[cg.OW]
    KH, KW, sh, sw, ph, pw = geom[cg.KH], geom[cg.KW], geom[cg.SH], geom[cg.SW], geom[cg.PH], geom[cg.PW]
    G = geom[cg.GROUP]
    Mg, HW, S, KT = M // G, H * W, OH * OW, KH * KW
    per = ws.size // block_dim
    wsb = ws[block_idx * per:(block_idx + 1) * per]
    pad, xs, ys = wsb[:lw], wsb[lw:lw + HW], wsb[lw + HW:lw + HW + Mg * S]
    zs = wsb[lw + HW + Mg * S:lw + HW + 2 * Mg * S] if has_z else ys
    taps = np.empty(KT, np.int64)
    one = np.int64(block_dim > 0)   # 1 as an int64 variable: literal arguments would compile another depthwise
    q0, q1 = block_range(N * G, 1, block_idx, block_dim)
    for q in range(q0, q1):
        g = q % G
        widen_run(x, q * HW, xs, 0, HW, kind)
        if has_z:
            widen_run(z, q * Mg * S, zs, 0, Mg * S, kind)
        # one pair as a conv of one group: plane 0 of xs, this group's weights and bias (b stands in for an
        # absent bias: W, which has more than M elements)
        depthwise(xs, w[g * Mg * KT:(g + 1) * Mg * KT], b[g * Mg:(g + 1) * Mg], zs, ys, pad, taps,
                  one - 1, one, one, Mg, H, W, OH, OW, KH, KW, sh, sw, ph, pw, tile, has_b, has_z, act, p0, p1)
        narrow_run(ys, 0, y, q * Mg * S, Mg * S, kind)


def depthwise16_fits(node) -> bool:
    """An IR Conv node that conv's DEPTHWISE runs (one input channel a group, at most 4 outputs each, 2-D,
    undilated) with float32 constant weights: drop_half_casts may give it 16-bit maps."""
    x, w = node.inputs[0], node.inputs[1]
    if w is None or w.const is None or w.dtype != np.float32 or len(w.shape) != 4 or x.shape is None or \
            len(x.shape) != 4 or not isinstance(x.shape[1], int):
        return False
    group = int(node.attrs.get("group", 1))
    return (w.shape[1] == 1 and group == x.shape[1] and w.shape[0] % group == 0 and w.shape[0] // group <= 4
            and all(int(d) == 1 for d in node.attrs.get("dilations", (1, 1))))


def prepare_depthwise16(ctx: KernelContext, geom, bd: int, tile: int, lw: int, act_args) -> Launch:
    """The launch of depthwise16 in bd blocks of pairs; tile, lw: conv._plan's DEPTHWISE tile and padded rows."""
    if ctx.has(3) and ctx.inputs[3].dtype != ctx.inputs[0].dtype:
        raise ctx.error(f"Z is {ctx.inputs[3].dtype}, X {ctx.inputs[0].dtype}: both must be the same type")
    H, W, M, OH, OW, G = (int(v) for v in geom[[cg.H, cg.W, cg.M, cg.OH, cg.OW, cg.GROUP]])
    has_b, has_z = ctx.has(2), ctx.has(3)
    per = lw + H * W + (M // G) * OH * OW * (2 if has_z else 1)
    kind = F16 if ctx.inputs[0].dtype == np.float16 else BF16
    act, p0, p1 = act_args
    return Launch(depthwise16, (geom, kind, int(has_b), int(has_z), act, p0, p1, tile, lw),
                  (TensorSpec((bd * per,), np.float32),), (0, 1, 2 if has_b else 1, 3 if has_z else 0),
                  tiled=True, block_dim=bd)

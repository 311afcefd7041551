"""ReverseSequence: reverse the first sequence_lens[b] steps along time_axis of every batch entry b.

The tensor is seen as (time, batch, inner) or (batch, time, inner) (time_axis and batch_axis are 0 and 1,
as the spec requires), an entry's step t being a contiguous run of `inner` elements: step t < len goes to
len - 1 - t, the rest is copied. Lengths are run-time data: one outside [0, time] is an IndexError, which
the runtimes report as an ExecutionError naming the node.

Blocks (AI cores): the batch entries split across blocks (an entry's steps stay in one block); a step
copies ~0.2 ns per float32 element.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .blocks import blocks, tiled
from .registry import KernelContext, Launch, TensorSpec, register
from .strided import DTYPES, copy_run
from .tiling import block_range

_NS = 0.2


@njit(nogil=True, cache=True)
def reverse_sequence(x, lens, out, steps, batch, inner, time_stride, batch_stride, block_idx, block_dim):
    b0, b1 = block_range(batch, 1, block_idx, block_dim)
    for b in range(b0, b1):
        n = np.int64(lens[b])
        if n < 0 or n > steps:
            raise IndexError("sequence_lens entry out of range [0, time steps]")
        for t in range(steps):
            src = (n - 1 - t if t < n else t) * time_stride + b * batch_stride
            copy_run(x, src, out, t * time_stride + b * batch_stride, inner)


def _plan(ctx: KernelContext):
    x, lens = ctx.inputs
    ta, ba = ctx.attr("time_axis", 0), ctx.attr("batch_axis", 1)
    if len(x.shape) < 2 or {ta, ba} != {0, 1}:
        raise ctx.error(f"needs rank >= 2 and time_axis, batch_axis = 0, 1 or 1, 0; got rank {len(x.shape)}, "
                        f"time_axis {ta}, batch_axis {ba}")
    ctx.require_dtype(1, (np.int32, np.int64))
    if lens.shape != (x.shape[ba],):
        raise ctx.error(f"sequence_lens has shape {lens.shape}, the batch axis is {x.shape[ba]} long")
    inner = math.prod(x.shape[2:])
    strides = (x.shape[1] * inner, inner)  # of axis 0 and axis 1
    return x.shape[ta], x.shape[ba], inner, strides[ta], strides[ba]


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, DTYPES)
    _plan(ctx)
    return [ctx.inputs[0]]


@register("ReverseSequence", infer=_infer)
def _prepare(ctx: KernelContext) -> Launch:
    steps, batch, inner, ts, bs = _plan(ctx)
    nb = blocks(ctx, batch, _NS * steps * inner * ctx.inputs[0].dtype.itemsize / 4)
    return tiled(reverse_sequence, (steps, batch, inner, ts, bs), nb)

"""What the non-GEMM families share to run as blocks over AI cores (tiling.py has the rules).

Most kernels walk their output as rows of n elements (a broadcast row, a copy run, the inner columns of
an (outer, n, inner) view). `row_range` gives block b a flat range [lo, hi) of that walk whose ends sit
at a row start plus a multiple of a grain (G columns for vector loops), so a vectorised row loop and its remainder
cover the same elements whatever the block count (rule 3), and a few long rows still split evenly.
Kernels whose rows are reductions (a Softmax row, a LayerNorm row) split whole rows with
`tiling.block_range(rows, 1, ...)` instead.

Thresholds come from measured single-thread cost: a block must hold MIN_BLOCK_NS of work, so a launch
over `units` pieces of `ns` nanoseconds each gets min(cores, units * ns / MIN_BLOCK_NS) blocks. 25 us is
about ten times the cost of handing a block to another core (1-3 us plus a wake-up), so a launch that
tiles gains at least ~40% of the second core's share. The per-family ns figures (measured on this
machine's Xeon, float32 unless stated, one thread, warm cache) sit next to each prepare.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .registry import KernelContext, Launch, TensorSpec
from .tiling import block_dim_for, block_range

G = 64  # columns per split unit: a multiple of every vector loop's step (16 float32 lanes x 4 unrolled)
MIN_BLOCK_NS = 25_000
LINE = 64  # bytes in a cache line


def min_units(ns_per_unit: float) -> int:
    """Units a block needs to hold MIN_BLOCK_NS of work."""
    return max(1, math.ceil(MIN_BLOCK_NS / max(ns_per_unit, 1e-3)))


def blocks(ctx: KernelContext, units: int, ns_per_unit: float) -> int:
    """block_dim for `units` independent pieces of work costing `ns_per_unit` each."""
    return block_dim_for(int(units), ctx.cores, min_units(ns_per_unit))


def tiled(fn, args: tuple, block_dim: int, workspaces=(), **kw) -> Launch:
    return Launch(fn, tuple(args), tuple(workspaces), tiled=True, block_dim=block_dim, **kw)


def per_block(n: int, dtype, block_dim: int) -> TensorSpec:
    """A workspace of n elements for each block, each part followed by a cache line no block writes:
    blocks rewrite their scratch rows all the time, and two cores sharing a line at a boundary ran
    MaxPool's 2 blocks on 2 threads slower than 1 block on 1 (825 vs 600 us, measured)."""
    dtype = np.dtype(dtype)
    stride = max(n, 1) + (LINE // dtype.itemsize if block_dim > 1 else 0)
    return TensorSpec((stride * block_dim,), dtype)


@njit(nogil=True, cache=True, inline="always")
def own(ws, n, block_idx, block_dim):
    """Block `block_idx`'s n elements of a `per_block` workspace."""
    per = ws.size // block_dim
    return ws[block_idx * per:block_idx * per + n]


@njit(nogil=True, cache=True, inline="always")
def row_range(total, n, grain, block_idx, block_dim):
    """[lo, hi) of a flat walk over total // n rows of n elements for block `block_idx`: the split units
    are `grain`-column pieces of a row, so every end is a row start plus a multiple of grain (or the
    row's end)."""
    if n <= 0 or total <= 0:
        return 0, 0
    cpr = (n + grain - 1) // grain
    u_lo, u_hi = block_range(total // n * cpr, 1, block_idx, block_dim)
    return u_lo // cpr * n + u_lo % cpr * grain, u_hi // cpr * n + u_hi % cpr * grain


@njit(nogil=True, cache=True, inline="always")
def row_index(shape, r, row):
    """The multi-index (length r, last entry 0) of row `row` of a walk over rows of shape[r - 1] elements."""
    idx = np.zeros(r, np.int64)
    for d in range(r - 2, -1, -1):
        idx[d] = row % shape[d]
        row //= shape[d]
    return idx


def byte_scale(ctx: KernelContext) -> float:
    """Memory-bound costs measured in float32 -> float32, scaled to input 0's and output 0's widths."""
    return (ctx.inputs[0].dtype.itemsize + ctx.outputs[0].dtype.itemsize) / 8


def flat_launch(ctx: KernelContext, fn, args: tuple, ns_per_elem: float, **kw) -> Launch:
    """A launch whose blocks split output 0 as one flat range (elementwise kernels); ns_per_elem is the
    float32 cost."""
    return tiled(fn, args, blocks(ctx, ctx.outputs[0].size, ns_per_elem * byte_scale(ctx)), **kw)

"""Tiling: how many blocks a launch gets (host side, in `prepare`) and which part block b computes (kernel side).

Ascend's model: a host-side tiling function picks `blockDim` and the split of the work; each AI core runs
the kernel for its `GetBlockIdx()`. Here `prepare` is the tiling function: it returns a `Launch` with
`tiled=True` and `block_dim=block_dim_for(...)`, and the kernel, called with `(block_idx, block_dim)` last,
computes its part (often through `block_range`).

Every tiled kernel keeps four rules:
1. Blocks write disjoint parts of the outputs and workspaces (a workspace is sized for `block_dim` blocks
   and sliced by block index), and no block reads what another block writes.
2. Blocks never split a reduction (GEMM's K, a Softmax row, a pooling window): every output element is
   computed by the same operations whatever `block_dim` is, so results are bitwise equal for any core count.
3. Split points fall on multiples of a grain (a SIMD width, a micro-kernel tile), so vectorised main loops
   and their remainders cover the same elements as in one block.
4. A launch too small to pay for waking a core keeps `block_dim` 1: each block must have at least
   `min_units` of work (per family, measured against the cost of dispatching a block).
"""
from __future__ import annotations

from numba import njit


def block_dim_for(units: int, cores: int, min_units: int) -> int:
    """Blocks for `units` independent pieces of work: at most `cores`, each with at least `min_units`."""
    if cores <= 1 or units < 2 * max(1, min_units):
        return 1
    return max(1, min(cores, units // max(1, min_units)))


def largest_share(total: int, grain: int, block_dim: int) -> int:
    """The largest part `block_range` gives a block (host side: to size a per-block workspace)."""
    units = -(-total // grain)
    return min(total, -(-units // block_dim) * grain)


@njit(nogil=True, cache=True, inline="always")
def block_range(total, grain, block_idx, block_dim):
    """[lo, hi) of block `block_idx` when [0, total) is cut into `block_dim` contiguous parts whose ends
    are multiples of `grain` (the last part ends at `total`); parts differ by at most one grain."""
    units = (total + grain - 1) // grain
    lo = units * block_idx // block_dim * grain
    hi = units * (block_idx + 1) // block_dim * grain
    return min(lo, total), min(hi, total)

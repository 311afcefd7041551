"""pool_plane._max3s2 and _max2s2 (MaxPool 3x3 and 2x2 at stride 2, written out) give the buffered path's
bits: floor and ceil modes, pads 0 and 1, planes narrower than a vector to several vectors wide (plain loads
past a row's end only where no window reads there), 1 and 3 blocks, NaN and infinities at row and plane
edges."""
import numpy as np
import pytest

import ge.kernels.pool_plane as P
from ge.kernels import pool_geom as pg
from ge.kernels.registry import KernelContext, TensorSpec, lookup


@pytest.mark.parametrize("H,W", [(111, 111), (27, 27), (56, 56), (9, 9), (4, 4), (13, 40), (33, 33), (3, 65)])
@pytest.mark.parametrize("pad,ceil", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("block_dim", [1, 3])
@pytest.mark.parametrize("k", [3, 2])
def test_max_s2_keeps_the_buffered_paths_bits(H, W, pad, ceil, block_dim, k):
    C = 3
    attrs = {"kernel_shape": [k, k], "strides": [2, 2], "pads": [pad] * 4, "ceil_mode": ceil}
    ctx = KernelContext("MaxPool", "p", attrs, [TensorSpec((1, C, H, W), np.float32)], [None], 13, cores=1)
    launch = lookup("MaxPool", "", 13).bind(ctx)
    assert launch.fn is P.pool2d
    rc, mode, ident, geom = launch.args
    OH, OW = int(geom[pg.OH]), int(geom[pg.OW])
    x = np.random.default_rng(H * W + pad).standard_normal(C * H * W).astype(np.float32)
    x[[W - 1, W, 2 * W + 1, H * W, H * W - 1, x.size - 1]] = [np.nan, np.inf, -np.inf, np.nan, np.inf, np.nan]
    fast, buffered = (np.full(C * OH * OW, 7.0, np.float32) for _ in range(2))
    for b in range(block_dim):
        P.pool2d(x, fast, rc, mode, ident, geom, b, block_dim)
        P._buffered(x, buffered, rc, mode, ident, geom, b, block_dim)
    np.testing.assert_array_equal(fast, buffered)

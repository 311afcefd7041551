"""pool_plane._flat (stride-1 windows that keep the plane's size, on planes narrower than four vectors: a
plane as one flat run) gives the row path's bits: max and average (pads counted or not), windows 3x3, 2x2
and 1x3 with their "same" pads, 1 and 3 blocks, NaN and infinities where rows meet."""
import numpy as np
import pytest

import ge.kernels.pool_plane as P
from ge.kernels.registry import KernelContext, TensorSpec, lookup


def _launch(op, C, H, W, K, pads, include, flat):
    attrs = {"kernel_shape": list(K), "strides": [1, 1], "pads": list(pads)}
    if op == "AveragePool":
        attrs["count_include_pad"] = include
    saved = P.FLAT_MAX_VECTORS
    P.FLAT_MAX_VECTORS = saved if flat else 0
    try:
        ctx = KernelContext(op, "p", attrs, [TensorSpec((1, C, H, W), np.float32)], [None], 13, cores=1)
        launch = lookup(op, "", 13).bind(ctx)
    finally:
        P.FLAT_MAX_VECTORS = saved
    assert launch.fn is P.pool2d and bool(launch.args[3][13]) == flat
    return launch.args


def _run(args, x, n_out, block_dim):
    rc, mode, ident, geom = args
    y = np.full(n_out, np.nan, np.float32)
    for b in range(block_dim):
        P.pool2d(x, y, rc, mode, ident, geom, b, block_dim)
    return y


@pytest.mark.parametrize("op,include", [("MaxPool", 0), ("AveragePool", 0), ("AveragePool", 1)])
@pytest.mark.parametrize("H,W,K,pads", [(7, 7, (3, 3), (1, 1, 1, 1)), (14, 14, (3, 3), (1, 1, 1, 1)),
                                        (28, 28, (3, 3), (1, 1, 1, 1)), (5, 9, (2, 2), (0, 0, 1, 1)),
                                        (6, 17, (1, 3), (0, 1, 0, 1)), (3, 4, (3, 3), (1, 1, 1, 1))])
@pytest.mark.parametrize("block_dim", [1, 3])
def test_flat_planes_keep_the_row_paths_bits(op, include, H, W, K, pads, block_dim):
    C = 5
    x = np.random.default_rng(H * W).standard_normal(C * H * W).astype(np.float32)
    x[W - 1], x[W], x[2 * W + 1], x[H * W] = np.nan, np.inf, -np.inf, np.nan   # where rows and planes meet
    flat = _run(_launch(op, C, H, W, K, pads, include, True), x, C * H * W, block_dim)
    rows = _run(_launch(op, C, H, W, K, pads, include, False), x, C * H * W, block_dim)
    np.testing.assert_array_equal(flat, rows)
    assert np.isfinite(flat[3 * H * W:]).all()


def test_wide_or_strided_planes_keep_the_row_path():
    ctx = KernelContext("MaxPool", "p", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1] * 4},
                        [TensorSpec((1, 2, 14, 14), np.float32)], [None], 13, cores=1)
    assert not lookup("MaxPool", "", 13).bind(ctx).args[3][13]
    ctx = KernelContext("MaxPool", "p", {"kernel_shape": [3, 3], "pads": [1] * 4},
                        [TensorSpec((1, 2, 9, 80), np.float32)], [None], 13, cores=1)
    assert not lookup("MaxPool", "", 13).bind(ctx).args[3][13]

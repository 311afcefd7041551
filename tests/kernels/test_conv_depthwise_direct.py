"""conv_depthwise's direct path (_direct, 3-, 5- and 7-wide rows shifted in registers) gives the padded copy's
bits and the reference's values, whichever of the two the machine runs by default (DIRECT: AMD's AVX-512 only):
two copies of `depthwise` are compiled here, one each way."""
import numpy as np
import pytest

import ge.kernels.conv_depthwise as D
from ge.kernels.registry import KernelContext, TensorSpec, lookup
from ge.kernels.specialize import both_ways


@pytest.fixture(scope="module")
def copies():
    flat, D.FLAT = D.FLAT, False   # the row paths on every plane here (test_conv_depthwise_flat has _flat)
    try:
        return both_ways(D, "DIRECT", D.depthwise, lambda fn: _run(fn, 2, 20, 24, 3))
    finally:
        D.FLAT = flat


def _run(fn, C, H, W, K, seed=0):
    ctx = KernelContext("Conv", "dw", {"group": C, "pads": [K // 2] * 4},
                        [TensorSpec((1, C, H, W), np.float32), TensorSpec((C, 1, K, K), np.float32),
                         TensorSpec((C,), np.float32)], [None] * 3, 17, cores=1)
    launch = lookup("Conv", "", 17).bind(ctx)
    _, mode, _, _, act, p0, p1, tile, _, _ = launch.args
    rng = np.random.default_rng(seed)
    x, w, b = (rng.standard_normal(n).astype(np.float32) for n in (C * H * W, C * K * K, C))
    y, ws = np.zeros(C * H * W, np.float32), np.zeros(launch.workspaces[0].shape, np.float32)
    fn(x, w, b, x, y, ws, np.empty(K * K, np.int64), 0, C, C, 1, H, W, H, W, K, K, 1, 1, K // 2, K // 2, tile,
       1, 0, act, p0, p1)
    return y.reshape(C, H, W), x.reshape(C, H, W), w.reshape(C, K, K), b


def _reference(x, w, b):
    C, H, W = x.shape
    K = w.shape[1]
    p = np.pad(x.astype(np.float64), ((0, 0), (K // 2, K // 2), (K // 2, K // 2)))
    y = np.zeros((C, H, W)) + b[:, None, None]
    for kh in range(K):
        for kw in range(K):
            y += w[:, kh, kw, None, None] * p[:, kh:kh + H, kw:kw + W]
    return y


@pytest.mark.parametrize("K", [3, 5, 7])
@pytest.mark.parametrize("H,W", [(8, 20), (12, 56), (4, 33)])
def test_direct_path_keeps_the_padded_copys_bits(copies, K, H, W):
    padded, x, w, b = _run(copies[False], 3, H, W, K)
    direct, *_ = _run(copies[True], 3, H, W, K)
    np.testing.assert_array_equal(direct, padded)
    np.testing.assert_allclose(direct, _reference(x, w, b), rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def by_rows():
    """depthwise with _flat off: planes this narrow take the row tiles."""
    return both_ways(D, "FLAT", D.depthwise, lambda fn: _run(fn, 2, 20, 24, 3))[False]


@pytest.mark.parametrize("flat", [False, True])
@pytest.mark.parametrize("H,W,Mg,tile", [(7, 7, 2, 3), (14, 14, 2, 5), (9, 30, 2, 4), (5, 16, 1, 2), (6, 40, 2, 4)])
def test_whole_vector_stores_stay_in_their_plane(by_rows, flat, H, W, Mg, tile):
    """Rows of one or two vectors end in a whole-vector store running on into the plane's later rows (_out),
    flat planes' last vector into the next plane; with a channel multiplier the planes' tiles interleave:
    every plane must still hold exactly its values."""
    C, K = 3, 3
    ctx = KernelContext("Conv", "dw", {"group": C, "pads": [1] * 4},
                        [TensorSpec((1, C, H, W), np.float32), TensorSpec((C * Mg, 1, K, K), np.float32),
                         TensorSpec((C * Mg,), np.float32)], [None] * 3, 17, cores=1)
    launch = lookup("Conv", "", 17).bind(ctx)
    _, mode, _, _, act, p0, p1, _, _, _ = launch.args
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(n).astype(np.float32) for n in (C * H * W, C * Mg * K * K, C * Mg))
    y, ws = np.full(C * Mg * H * W, np.nan, np.float32), np.zeros(launch.workspaces[0].shape, np.float32)
    (D.depthwise if flat else by_rows)(x, w, b, x, y, ws, np.empty(K * K, np.int64), 0, C, C, Mg, H, W, H, W, K,
                                       K, 1, 1, 1, 1, tile, 1, 0, act, p0, p1)
    xs, ws_ = x.reshape(C, H, W), w.reshape(C, Mg, K, K)
    for m in range(Mg):
        want = _reference(xs, ws_[:, m], b.reshape(C, Mg)[:, m])
        np.testing.assert_allclose(y.reshape(C, Mg, H, W)[:, m], want, rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def reuse_copies():
    """depthwise with _reused's tiles of four rows and without (_wide), the direct and flat paths off."""
    saved = D.DIRECT, D.FLAT
    D.DIRECT, D.FLAT = False, False
    try:
        return both_ways(D, "REUSE", D.depthwise, lambda fn: _run(fn, 2, 20, 24, 3))
    finally:
        D.DIRECT, D.FLAT = saved


@pytest.mark.parametrize("K", [1, 3, 5, 7])
@pytest.mark.parametrize("H,W", [(8, 20), (13, 56), (6, 33), (7, 7)])
def test_reused_rows_keep_the_wide_tiles_bits(reuse_copies, K, H, W):
    wide, x, w, b = _run(reuse_copies[False], 3, H, W, K, seed=K)
    reused, *_ = _run(reuse_copies[True], 3, H, W, K, seed=K)
    np.testing.assert_array_equal(reused, wide)
    np.testing.assert_allclose(reused, _reference(x, w, b), rtol=1e-4, atol=1e-4)

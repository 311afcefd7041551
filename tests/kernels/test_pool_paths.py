"""pool_plane's two paths give the same bits: the registers' (vnext shifts, AVX-512's default for windows up
to 3 wide, 5 at stride 2) and the row buffer's (every window without AVX-512: BUFFERED), whichever this
machine runs by default; two copies of pool2d are compiled here, one each way, and run on 1 and 3 blocks
(the buffer path's last vector of a block is masked, the others whole)."""
import numpy as np
import pytest

import ge.kernels.pool_plane as P
from ge.kernels.registry import KernelContext, TensorSpec, lookup
from ge.kernels.specialize import both_ways


@pytest.fixture(scope="module")
def copies():
    return both_ways(P, "BUFFERED", P.pool2d, lambda fn: _run(fn, "MaxPool", 2, 9, 3, 1, 1, 1))


def _run(fn, op, C, HW, K, S, pad, block_dim):
    attrs = {"kernel_shape": [K, K], "strides": [S, S], "pads": [pad] * 4}
    ctx = KernelContext(op, "p", attrs, [TensorSpec((1, C, HW, HW), np.float32)], [None], 13, cores=1)
    launch = lookup(op, "", 13).bind(ctx)
    assert launch.fn is P.pool2d
    rc, mode, ident, geom = launch.args
    x = np.random.default_rng(HW).standard_normal(C * HW * HW).astype(np.float32)
    OH = (HW + 2 * pad - K) // S + 1
    y = np.full(C * OH * OH, np.nan, np.float32)
    for b in range(block_dim):
        fn(x, y, rc, mode, ident, geom, b, block_dim)
    return y


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("HW,K,S", [(7, 3, 1), (14, 3, 1), (28, 3, 2), (33, 2, 2), (20, 3, 2), (9, 5, 2)])
@pytest.mark.parametrize("block_dim", [1, 3])
def test_buffer_path_keeps_the_register_paths_bits(copies, op, HW, K, S, block_dim):
    registers = _run(copies[False], op, 3, HW, K, S, K // 2, block_dim)
    buffered = _run(copies[True], op, 3, HW, K, S, K // 2, block_dim)
    assert not np.isnan(buffered).any()
    np.testing.assert_array_equal(buffered, registers)

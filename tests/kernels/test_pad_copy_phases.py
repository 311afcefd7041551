"""conv_lowering._pad_copy's stride-2 column phases come out the same both ways: split in vectors (veven /
vodd: PAIR, AVX-512's default) or copied element by element (the default without AVX-512). Two copies are
compiled here, whichever this machine runs."""
import numpy as np
import pytest

import ge.kernels.conv_lowering as CL
from ge.kernels.specialize import both_ways


@pytest.fixture(scope="module")
def copies():
    return both_ways(CL, "PAIR", CL._pad_copy, lambda fn: _run(fn, 1, 6, 9, 0.0))


def _run(fn, C, H, W, fill, K=3, pad=1, i0=0):
    OH, OW = (H + 2 * pad - K) // 2 + 1, (W + 2 * pad - K) // 2 + 1
    R, Wq = OH - i0 + (K - 1) // 2, OW + (K - 1) // 2
    cs = CL._channel_stride(R, Wq)
    x = np.random.default_rng(W).standard_normal(C * H * W).astype(np.float32)
    p = np.full(4 * C * cs + 40, np.nan, np.float32)
    fn(x, 0, p, fill, C, H, W, pad, pad, 2, 2, 2, 2, i0, R, Wq, cs, 40)
    return p


@pytest.mark.parametrize("C,H,W,fill,i0", [(1, 14, 14, 0.0, 0), (2, 28, 28, 0.0, 3), (3, 7, 33, -np.inf, 0),
                                            (1, 56, 56, 0.0, 0), (2, 9, 40, 0.0, 1)])
def test_phases_in_vectors_match_the_element_copy(copies, C, H, W, fill, i0):
    vectors, elements = (_run(copies[pair], C, H, W, fill, i0=i0) for pair in (True, False))
    np.testing.assert_array_equal(vectors, elements)

"""conv_depthwise_blocked (whole blocks of 16 channels on the lanes, transposed in and out) gives the
row tiles' bits: kernels 1x3 to 7x7 at strides 1 and 2, "same" and "valid" pads, planes narrower and wider
than a vector, channel counts with a remainder for the rows, blocks that cross images, the activations fused
in registers and those run after (SiLU), a residual, and inf / NaN in the input."""
import numpy as np
import pytest

import ge.kernels.conv_depthwise as D
import ge.kernels.conv_depthwise_blocked as B
from ge.kernels.epilogue import CLIP, HARD_SWISH, NONE, RELU, SILU

pytestmark = pytest.mark.skipif(not D.BLOCKED, reason="needs AVX-512 (16 float32 lanes)")


def _run(C, H, W, KH, KW, pads, act=NONE, has_z=0, images=1, per_channel=False, st=1):
    """y of depthwise on `images` x C planes: in one call (blocks of 16, the rest as rows) or a call a
    channel (always the rows: fewer than 16)."""
    ph, pw = pads
    OH, OW = (H + 2 * ph - KH) // st + 1, (W + 2 * pw - KW) // st + 1
    n = images * C
    rng = np.random.default_rng(C * H * W + KH * KW)
    x, w, b = (rng.standard_normal(k).astype(np.float32) for k in (n * H * W, C * KH * KW, C))
    z = rng.standard_normal(n * OH * OW).astype(np.float32)
    x[W - 1], x[2 * W], x[5 * H * W + 3] = np.inf, np.nan, -np.inf
    ws = np.zeros(1 << 17, np.float32)
    y = np.full(n * OH * OW, -7.0, np.float32)
    taps = np.empty(KH * KW, np.int64)
    for q0, q1 in ([(q, q + 1) for q in range(n)] if per_channel else [(0, n)]):
        D.depthwise(x, w, b, z, y, ws, taps, q0, q1, C, 1, H, W, OH, OW, KH, KW, st, st, ph, pw, 4, 1, has_z,
                    act, 0.0, 6.0)
    return y


@pytest.mark.parametrize("H,W,KH,KW,pads", [(28, 28, 5, 5, (2, 2)), (14, 14, 3, 3, (1, 1)), (9, 20, 7, 7, (3, 3)),
                                            (7, 7, 3, 3, (1, 1)), (6, 5, 1, 3, (0, 1)), (10, 12, 3, 3, (0, 0)),
                                            (3, 40, 5, 5, (2, 2)), (17, 33, 3, 5, (1, 2))])
@pytest.mark.parametrize("C", [16, 40])
def test_blocked_keeps_the_row_tiles_bits(H, W, KH, KW, pads, C):
    np.testing.assert_array_equal(_run(C, H, W, KH, KW, pads), _run(C, H, W, KH, KW, pads, per_channel=True))


@pytest.mark.parametrize("H,W,KH,KW,pads", [(28, 28, 3, 3, (1, 1)), (14, 14, 5, 5, (2, 2)), (9, 20, 5, 5, (2, 2)),
                                            (7, 7, 3, 3, (1, 1)), (10, 12, 3, 3, (0, 0)), (17, 33, 3, 5, (1, 2)),
                                            (5, 6, 1, 3, (0, 1))])
def test_blocked_at_stride_2_keeps_the_row_tiles_bits(H, W, KH, KW, pads):
    np.testing.assert_array_equal(_run(40, H, W, KH, KW, pads, st=2),
                                  _run(40, H, W, KH, KW, pads, st=2, per_channel=True))


@pytest.mark.parametrize("act,has_z", [(RELU, 0), (CLIP, 0), (HARD_SWISH, 0), (SILU, 0), (NONE, 1), (RELU, 1)])
def test_blocked_epilogues_keep_the_row_tiles_bits(act, has_z):
    got, rows = (_run(24, 11, 13, 3, 3, (1, 1), act, has_z, images=2, per_channel=p) for p in (False, True))
    np.testing.assert_array_equal(got, rows)


def test_blocked_fits_strides_1_2_one_channel_a_group_and_odd_widths():
    assert B.blocked_fits(1, 1, 1, 5, 16) and not B.blocked_fits(1, 1, 1, 5, 8)   # float64: 8 lanes
    assert B.blocked_fits(2, 2, 1, 3, 16) and not B.blocked_fits(3, 3, 1, 3, 16) and not B.blocked_fits(2, 2, 1, 7, 16)
    assert not B.blocked_fits(1, 2, 1, 3, 16) and not B.blocked_fits(1, 1, 2, 3, 16)
    assert not B.blocked_fits(1, 1, 1, 4, 16) and not B.blocked_fits(1, 1, 1, 9, 16)

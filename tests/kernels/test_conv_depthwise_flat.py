"""conv_depthwise._flat (stride-1 planes that keep their size, at most half a vector wide: each plane one flat
run) gives the row tiles' bits: kernels 1x3 to 7x7, "same" pads even when uneven, a channel multiplier, the
activations fused in registers and those run after (SiLU), a residual, blocks that start mid-way, and values
that do not vanish (inf, NaN) next to the zeroed row edges."""
import numpy as np
import pytest

import ge.kernels.conv_depthwise as D
from ge.kernels.epilogue import CLIP, HARD_SWISH, NONE, SILU
from ge.kernels.specialize import both_ways


def _args(C, Mg, H, W, KH, KW, pads, seed):
    rng = np.random.default_rng(seed)
    x, w, b, z = (rng.standard_normal(n).astype(np.float32) for n in (C * H * W, C * Mg * KH * KW, C * Mg,
                                                                       C * Mg * H * W))
    x[W - 1], x[2 * W] = np.inf, np.nan   # the last column of row 0, the first of row 2
    return x, w, b, z


def _run(fn, C, Mg, H, W, KH, KW, pads, act=NONE, has_z=0, q=(0, None), seed=0):
    x, w, b, z = _args(C, Mg, H, W, KH, KW, pads, seed)
    ph, pw = pads
    ws = np.zeros(1 << 16, np.float32)
    y = np.full(C * Mg * H * W, -7.0, np.float32)
    q0, q1 = q[0], C if q[1] is None else q[1]
    fn(x, w, b, z, y, ws, np.empty(KH * KW, np.int64), q0, q1, C, Mg, H, W, H, W, KH, KW, 1, 1, ph, pw, 4,
       1, has_z, act, 0.0, 6.0)
    return y


@pytest.fixture(scope="module")
def copies():
    return both_ways(D, "FLAT", D.depthwise, lambda fn: _run(fn, 2, 1, 7, 7, 3, 3, (1, 1)))


@pytest.mark.parametrize("H,W,KH,KW,pads", [(7, 7, 3, 3, (1, 1)), (7, 7, 5, 5, (2, 2)), (7, 7, 7, 7, (3, 3)),
                                            (12, 8, 3, 3, (1, 1)), (3, 5, 7, 7, (3, 3)), (6, 6, 2, 2, (0, 0)),
                                            (4, 8, 1, 3, (0, 1)), (10, 3, 5, 5, (2, 2))])
@pytest.mark.parametrize("Mg", [1, 2])
def test_flat_planes_keep_the_row_tiles_bits(copies, H, W, KH, KW, pads, Mg):
    rows, flat = (_run(copies[v], 3, Mg, H, W, KH, KW, pads) for v in (False, True))
    np.testing.assert_array_equal(flat, rows)


@pytest.mark.parametrize("act,has_z", [(CLIP, 0), (HARD_SWISH, 0), (SILU, 0), (NONE, 1)])
def test_flat_epilogues_keep_the_row_tiles_bits(copies, act, has_z):
    rows, flat = (_run(copies[v], 4, 1, 9, 8, 3, 3, (1, 1), act, has_z) for v in (False, True))
    np.testing.assert_array_equal(flat, rows)


def test_only_narrow_same_planes_go_flat():
    assert D.flat_plane(7, 7, 7, 7, 1, 1, 16) and not D.flat_plane(7, 7, 7, 7, 1, 1, 8)   # float64: 8 lanes
    assert not D.flat_plane(14, 14, 14, 14, 1, 1, 16) and not D.flat_plane(14, 14, 7, 7, 2, 2, 16)
    assert not D.flat_plane(7, 7, 5, 5, 1, 1, 16)   # a "valid" conv: the output smaller than the plane


def test_a_block_writes_only_its_planes(copies):
    rows, flat = (_run(copies[v], 5, 2, 7, 7, 3, 3, (1, 1), q=(1, 3)) for v in (False, True))
    np.testing.assert_array_equal(flat, rows)
    assert (flat[:2 * 49] == -7).all() and (flat[6 * 49:] == -7).all()

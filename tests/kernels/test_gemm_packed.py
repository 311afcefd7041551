"""gemm_packed: a B packed once (pack_b) gives the bits of gemm.py's GEMM on the same B, for any block
split; MatMul on packed weights (ge::FusedMatMul[weight_shape]) tiled for 1, 2 and 3 cores alike."""
import numpy as np
import pytest
from op_check import make_model, run_ge

from ge.kernels.gemm import gemm_nn_ld, share, ROWS, COLS
from ge.kernels.gemm_packed import gemm_packed_block, pack_b, packed_size, packed_workspace

rng = np.random.default_rng(3)


@pytest.mark.parametrize("M,N,K", [(1, 32, 8), (13, 40, 7), (197, 768, 300), (130, 600, 520), (64, 49, 256),
                                   (9, 1100, 64)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_packed_gemm_is_bitwise_the_gemm(M, N, K, dtype):
    a = rng.standard_normal(M * K).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    want = np.zeros(M * N, dtype)
    gemm_nn_ld(a, b.reshape(-1), want, M, N, K, K, 1, N, N, False)
    bp = pack_b(b)
    assert bp.size == packed_size(K, N, dtype)
    lanes = 64 // np.dtype(dtype).itemsize
    for axis in (ROWS, COLS):
        for bd in (1, 2, 3):
            got = np.full(M * N, np.nan, dtype)
            for i in range(bd):
                m0, m1, n0, n1 = share(M, N, axis, lanes, i, bd)
                ws = np.empty(packed_workspace(m1 - m0, K, dtype), dtype)
                gemm_packed_block(a, bp, N, got, N, K, K, m0, m1, n0, n1, ws)
            assert np.array_equal(got, want), (axis, bd)


@pytest.mark.parametrize("N", [52, 61, 64])
def test_padded_lanes_of_a_packed_panel_never_reach_c(N):
    """A packed panel's second vector is loaded whole (microkernel FULL_PANELS): its lanes past N are the
    zero padding times A, NaN where A is inf, and must never be stored. C with a row stride past N keeps
    what lies beyond N; the columns up to N still match the unpacked GEMM, NaN and inf included."""
    M, K, ldc = 21, 40, N + 24
    a = rng.standard_normal(M * K).astype(np.float32)
    a[5 * K + 3], a[17 * K + 9] = np.inf, np.nan
    b = rng.standard_normal((K, N)).astype(np.float32)
    want = np.zeros(M * N, np.float32)
    gemm_nn_ld(a, b.reshape(-1), want, M, N, K, K, 1, N, N, False)
    got = np.full(M * ldc, 7.0, np.float32)
    gemm_packed_block(a, pack_b(b), N, got, ldc, K, K, 0, M, 0, N, np.empty(packed_workspace(M, K, np.float32),
                                                                                np.float32))
    got = got.reshape(M, ldc)
    assert (got[:, N:] == 7.0).all()
    np.testing.assert_array_equal(got[:, :N], want.reshape(M, N))


@pytest.mark.parametrize("sa,act", [((2, 7, 24), None), ((200, 64), "Relu"), ((1, 197, 96), "Relu"), ((24,), None)])
def test_matmul_on_packed_weights(sa, act):
    K, N = sa[-1], 80
    x, w, bias = (rng.standard_normal(sa).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32),
                  rng.standard_normal(N).astype(np.float32))
    attrs = {"weight_shape": [K, N], **({"activation": act} if act else {})}
    model, feeds = make_model("FusedMatMul", [x, pack_b(w), bias], attrs, domain="ge", const_inputs=(1, 2))
    (got,) = run_ge(model, feeds)
    want = np.matmul(x.astype(np.float64), w) + bias
    np.testing.assert_allclose(got, np.maximum(want, 0) if act else want, rtol=1e-4, atol=1e-4)
    for cores in (2, 3):
        assert np.array_equal(run_ge(model, feeds, cores=cores)[0], got)
    plain, pfeeds = make_model("FusedMatMul", [x, w, bias], {k: v for k, v in attrs.items() if k != "weight_shape"},
                               domain="ge", const_inputs=(1, 2))
    assert np.array_equal(run_ge(plain, pfeeds)[0], got)


@pytest.mark.parametrize("act", [None, "Gelu"])
def test_bias_and_activation_in_column_slices_keep_the_bits(act):
    """Wider than matmul.EPILOGUE_COLS: the packed MatMul runs its columns in slices, each finished by the
    epilogue; the bits of the unpacked kernel (one GEMM, then the epilogue) for 1, 2 and 3 cores."""
    from ge.kernels.matmul import EPILOGUE_COLS
    M, K, N = 11, 16, 2 * EPILOGUE_COLS + 40
    x, w, bias = (rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32),
                  rng.standard_normal(N).astype(np.float32))
    attrs = {"activation": act} if act else {}
    plain, pfeeds = make_model("FusedMatMul", [x, w, bias], attrs, domain="ge", const_inputs=(1, 2))
    want = run_ge(plain, pfeeds)[0]
    model, feeds = make_model("FusedMatMul", [x, pack_b(w), bias], {**attrs, "weight_shape": [K, N]}, domain="ge",
                              const_inputs=(1, 2))
    for cores in (1, 2, 3):
        assert np.array_equal(run_ge(model, feeds, cores=cores)[0], want), cores


def test_packed_weights_of_another_shape_are_refused():
    from ge.errors import ShapeError
    x, w = rng.standard_normal((3, 8)).astype(np.float32), rng.standard_normal((8, 40)).astype(np.float32)
    with pytest.raises(ShapeError, match="weight_shape"):
        run_ge(*make_model("FusedMatMul", [x, pack_b(w)], {"weight_shape": [8, 70]}, domain="ge",
                           const_inputs=(1,)))

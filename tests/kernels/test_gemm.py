"""The GEMM core: exact against float64 numpy within float32 rounding, and channel-uniform."""
import numpy as np
import pytest

from ge.kernels.gemm import gemm_nn, gemm_nn_ld, gemm_nt

rng = np.random.default_rng(0)


@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (3, 5, 7), (4, 16, 8), (13, 600, 131), (64, 49, 300),
                                   (5, 1, 2100)])
@pytest.mark.parametrize("accumulate", [False, True])
def test_gemm_matches_numpy(M, N, K, accumulate):
    a = rng.standard_normal(M * K).astype(np.float32)
    b = rng.standard_normal(K * N).astype(np.float32)
    c0 = rng.standard_normal(M * N).astype(np.float32)
    want = a.reshape(M, K).astype(np.float64) @ b.reshape(K, N)
    if accumulate:
        want = want + c0.reshape(M, N)
    for fn, bb in ((gemm_nn, b), (gemm_nt, np.ascontiguousarray(b.reshape(K, N).T).reshape(-1))):
        c = c0.copy()
        fn(a, bb, c, M, N, K, K, 1, accumulate)
        np.testing.assert_allclose(c.reshape(M, N), want, rtol=1e-4, atol=1e-4 * np.sqrt(K))
    c = c0.copy()  # A read transposed through its strides
    gemm_nn(np.ascontiguousarray(a.reshape(M, K).T).reshape(-1), b, c, M, N, K, 1, M, accumulate)
    np.testing.assert_allclose(c.reshape(M, N), want, rtol=1e-4, atol=1e-4 * np.sqrt(K))


@pytest.mark.parametrize("M,N,K", [(131, 729, 67), (1000, 169, 512)])
def test_equal_weights_give_bitwise_equal_channels(M, N, K):
    """Regression: SqueezeNet's light model needs channels with equal weights to agree exactly."""
    a = np.full(M * K, 0.02, np.float32)
    b = (rng.standard_normal(K * N) * 1000).astype(np.float32)
    c = np.empty(M * N, np.float32)
    gemm_nn(a, b, c, M, N, K, K, 1, False)
    assert np.ptp(c.reshape(M, N), axis=0).max() == 0


@pytest.mark.parametrize("M,N,K,ldb", [(1, 3, 5, 8), (7, 40, 300, 45), (50, 300, 70, 305), (300, 33, 260, 38),
                                       (20, 500, 300, 512), (33, 70, 20, 1024)])  # the last two: B packed
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_row_strides(M, N, K, ldb, dtype):
    """gemm_nn_ld reads B and writes C through row strides and leaves the columns past N alone; the
    shapes cover full and partial (masked) panels, leftover rows, and packed and unpacked B."""
    ldc = N + 3
    a = rng.standard_normal(M * K).astype(dtype)
    b = rng.standard_normal(K * ldb).astype(dtype)
    c = np.full(M * ldc, 7.0, dtype)
    gemm_nn_ld(a, b, c, M, N, K, K, 1, ldb, ldc, False)
    want = a.reshape(M, K).astype(np.float64) @ b.reshape(K, ldb)[:, :N]
    got = c.reshape(M, ldc)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got[:, :N], want, rtol=tol, atol=tol * np.sqrt(K))
    assert (got[:, N:] == 7.0).all()
    c2 = c.copy()
    gemm_nn_ld(a, b, c2, M, N, K, K, 1, ldb, ldc, True)  # accumulating doubles it
    np.testing.assert_allclose(c2.reshape(M, ldc)[:, :N], 2 * want, rtol=tol, atol=2 * tol * np.sqrt(K))


@pytest.mark.parametrize("M,N,K", [(100, 300, 70), (7, 45, 300)])
def test_equal_rows_and_columns_are_bitwise_equal(M, N, K):
    """Both ways round: rows of A equal -> rows of C equal, columns of B equal -> columns of C equal (the
    transposed use, channels as columns), whatever the tile, panel or mask an element falls in."""
    a = np.tile(rng.standard_normal(K).astype(np.float32), M)
    b = rng.standard_normal(K * N).astype(np.float32)
    c = np.empty(M * N, np.float32)
    gemm_nn(a, b, c, M, N, K, K, 1, False)
    assert np.ptp(c.reshape(M, N), axis=0).max() == 0
    a = rng.standard_normal(M * K).astype(np.float32)
    b = np.repeat(rng.standard_normal(K).astype(np.float32), N)
    gemm_nn(a, b, c, M, N, K, K, 1, False)
    assert np.ptp(c.reshape(M, N), axis=1).max() == 0

"""simd's masked loads and stores keep their meaning on both code paths: AVX-512's masked instructions
(NATIVE_MASKS) and AVX2's plain load and blend / plain store for whole vectors (vmaskmovps is slow there).
Both paths are compiled here, whatever this machine runs by default: lanes outside the mask read `fill` (or
zero) and nothing outside the array is touched, at its start, in its middle and at its end."""
import numpy as np
import pytest
from numba import njit

import ge.kernels.simd as S


def _kernels():
    @njit
    def load_n(a, i, n, out):
        S.vstore(out, 0, S.vload_n(a, i, n))

    @njit
    def load_in(a, i, lo, hi, out):
        S.vstore(out, 0, S.vload_in(a, i, lo, hi, -1.0))

    @njit
    def store_n(a, i, n):
        S.vstore_n(a, i, S.vsplat(a, 7.0), n)
    return load_n, load_in, store_n


@pytest.fixture(scope="module", params=[True, False], ids=["native-masks", "blend"])
def kernels(request):
    saved = S.NATIVE_MASKS
    S.NATIVE_MASKS = request.param
    try:
        fns = _kernels()
        a, out = np.zeros(40, np.float32), np.zeros(16, np.float32)
        fns[0](a, 0, 16, out), fns[1](a, 0, 0, 16, out), fns[2](a, 0, 16)  # compiled under this path
    finally:
        S.NATIVE_MASKS = saved
    return fns


L = 16
A = np.arange(1, 41, dtype=np.float32)   # 40 values: the array ends inside a third vector


@pytest.mark.parametrize("i,n", [(0, 16), (0, 5), (8, 0), (24, 16), (30, 10), (26, 14), (3, 20), (20, -2)])
def test_vload_n(kernels, i, n):
    out = np.full(L, np.nan, np.float32)
    kernels[0](A, i, n, out)
    k = max(0, min(n, L))
    np.testing.assert_array_equal(out, np.concatenate([A[i:i + k], np.zeros(L - k, np.float32)]))


@pytest.mark.parametrize("i,lo,hi", [(-3, 3, 16), (0, 0, 16), (10, 2, 9), (30, 0, 10), (-5, 5, 12), (28, 1, 12)])
def test_vload_in(kernels, i, lo, hi):
    out = np.full(L, np.nan, np.float32)
    kernels[1](A, i, lo, hi, out)
    want = np.full(L, -1.0, np.float32)
    want[lo:hi] = A[i + lo:i + hi]
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("i,n", [(0, 16), (4, 7), (24, 16), (30, 10), (2, 0), (10, 40)])
def test_vstore_n(kernels, i, n):
    a = np.zeros(48, np.float32)
    kernels[2](a, i, n)
    want = np.zeros(48, np.float32)
    want[i:i + max(0, min(n, L))] = 7.0
    np.testing.assert_array_equal(a, want)

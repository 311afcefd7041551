"""kernels/specialize.by_type: a shared kernel compiles once per argument types, whatever constants its
jitted callers pass (regression: the GEMM's block compiled 15 times in the kernel tests, ~40 s each)."""
from numba import njit

from ge.kernels import conv_lowering, epilogue, gemm
from ge.kernels.specialize import by_type


@by_type
@njit
def _axpy(a, x, y):
    return a * x + y


@njit
def _callers(x):
    return _axpy(2, x, 1) + _axpy(3, x, 0) + _axpy(x, 1, 2) + _axpy(False, x, 5)


@njit
def _plain(a, x, y):
    return a * x + y


@njit
def _plain_callers(x):
    return _plain(2, x, 1) + _plain(3, x, 0)


def test_constants_do_not_multiply_specializations():
    assert _callers(4) == (2 * 4 + 1) + (3 * 4) + (4 + 2) + 5
    assert len(_axpy.signatures) == 2   # (int64, int64, int64) and (bool, int64, int64): types, not values
    _plain_callers(4)
    assert len(_plain.signatures) == 2  # without it: one per literal mix


def test_the_shared_kernels_are_marked():
    for f in (gemm.gemm_block, gemm.gemm_nt_block, epilogue.epilogue, conv_lowering._pad_copy):
        assert f.get_call_template.__qualname__.startswith("by_type"), f

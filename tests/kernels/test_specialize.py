"""kernels/specialize.by_type: a shared kernel compiles once per argument types, whatever constants its
jitted callers pass (regression: the GEMM's block compiled 15 times in the kernel tests, ~40 s each)."""
import numpy as np
from numba import njit

from ge.kernels import axis_scan, conv, conv_depthwise, conv_implicit, conv_lowering, epilogue, gemm, reduce, select
from ge.kernels.registry import Launch, call
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
    for f in (gemm.gemm_block, gemm.gemm_nt_block, epilogue.epilogue, conv_lowering._pad_copy,
              conv_implicit._panels, conv_depthwise._dw_rows, conv._share, reduce.fold, axis_scan._sift_down,
              select._merge_sort):  # each was compiled a second time for a literal (DEPTHWISE's rows: 36 s)
        assert f.get_call_template.__qualname__.startswith("by_type"), f


def test_read_only_inputs_reach_kernels_writable():
    """registry.call (constant folding, tests) copies a read-only input: numpy_helper.to_array gives read-only
    constants, and Numba would compile a second copy of the kernel for them (conv: ~100 s cold)."""
    seen = []

    def fn(x, y):
        seen.append(x.flags.writeable)
        y[:] = x

    x = np.arange(4.0)
    x.flags.writeable = False
    out = [np.empty(4)]
    call(Launch(fn, (), (), None), [x], out)
    assert seen == [True] and (out[0] == x).all()

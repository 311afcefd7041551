"""fast_exp: an exp that LLVM can vectorize, for float32 kernels (softmax and friends).

numba's np.exp is a scalar libm call (no SVML in pip's llvmlite), which made Softmax 30x slower than
onnxruntime. For float32, fast_exp computes exp(x) = 2^k * exp(r) with k = round(x / ln2) and
r = x - k*ln2 in [-ln2/2, ln2/2]; ln2 is split into a short high part (k*C1 is exact) and a low
correction (Cody-Waite). exp(r) = 1 + r + r^2 * P(r), with P of degree 4 fitted to the relative error on
Chebyshev nodes of that interval: max relative error 8e-8 (about 1.4 ulp) over [-87, 88]. 2^k is built
from exponent bits by a bitcast. Below ln(2^-126) the result flushes to 0 (no denormals), above
ln(2^127.5) it is inf (exp is finite up to 88.72: a 0.4% band the softmax family never reaches, as it
subtracts the max first). NaN stays NaN. Every other type keeps np.exp.

fast_exp is a numba overload: call it from jitted code only.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

_F = np.float32
_LO, _HI = _F(-87.33654), _F(88.37626)
_LOG2E, _HALF, _ONE = _F(1.4426950408889634), _F(0.5), _F(1.0)
_C1, _C2 = _F(0.693359375), _F(-2.1219444e-4)  # C1 + C2 = ln2; k * C1 is exact for |k| < 2^9
_P0, _P1, _P2, _P3, _P4 = _F(0.49999989), _F(0.16666518), _F(0.04166953), _F(0.00836892), _F(0.00137514)
_ZERO, _INF = _F(0.0), _F(np.inf)


@intrinsic
def _pow2_f32(typingctx, k):
    """2^k as float32 for an int32 k in [-126, 127]: the biased exponent shifted into place, bitcast."""
    if k != types.int32:
        return None

    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        e = builder.add(args[0], ir.Constant(i32, 127))
        return builder.bitcast(builder.shl(e, ir.Constant(i32, 23)), ir.FloatType())
    return types.float32(k), codegen


def _exp_f32(x):
    z = x if x > _LO else _LO
    z = z if z < _HI else _HI
    k = np.floor(z * _LOG2E + _HALF)
    r = (z - k * _C1) - k * _C2
    p = (((_P4 * r + _P3) * r + _P2) * r + _P1) * r + _P0
    e = (p * r * r + r + _ONE) * _pow2_f32(np.int32(k))
    e = _ZERO if x < _LO else e
    e = _INF if x > _HI else e
    return x if x != x else e


def fast_exp(x):
    """exp(x); vectorizable for float32 inside numba kernels."""
    return np.exp(x)


@overload(fast_exp)
def _fast_exp(x):
    if x == types.float32:
        return _exp_f32
    return lambda x: np.exp(x)

"""The 16-bit floats: float16 / bfloat16 <-> float32 conversion, on uint16 bit patterns.

Numba has no 16-bit float type, so tensors of these types reach kernels as uint16 arrays (ir.dtypes.storage).
Conversions round to nearest even, as numpy's float16 and ml_dtypes' bfloat16 casts do:
- float16 <-> float32 through LLVM's `fpext` / `fptrunc` on half (two intrinsics below): on a CPU with
  F16C / AVX512-FP16 the loop vectorizes to vcvtph2ps / vcvtps2ph, 16 lanes an instruction.
- bfloat16 <-> float32 in integer arithmetic on the float32 bits (bfloat16 is float32's upper half): a
  shift up; down, add 0x7FFF plus the kept half's lowest bit and shift, NaNs kept quiet. It vectorizes as is.
- from any other type (float64, ints, bool) to a 16-bit float the value goes through float64 and is rounded
  once: float64 -> float32 rounded to odd, then to nearest even (float64 -> float32 -> float16 rounded to
  nearest twice would be wrong at the midpoints).
Measured (bench/half_convert.py, one thread, 1M float32 elements, AMD EPYC Zen 4): float32 -> float16 0.08
ns/element (numpy's astype 16.0), float16 -> float32 0.08 (numpy 1.7), float32 -> bfloat16 0.10 (ml_dtypes
1.0), bfloat16 -> float32 0.08 (0.43); float64 -> float16 / bfloat16 through round-to-odd 1.7 / 2.4, where
a first scalar version (frexp/ldexp, rounding in float64) took 124.
"""
from __future__ import annotations


import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .blocks import G
from .tiling import block_range

F16, BF16 = 0, 1   # `kind` arguments: which 16-bit float a uint16 array holds


@intrinsic
def _as_f32(typingctx, u):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.uint32), codegen


@intrinsic
def _as_u32(typingctx, x):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


@intrinsic
def _f16_to_f32(typingctx, bits):
    def codegen(context, builder, sig, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return types.float32(types.uint16), codegen


@intrinsic
def _f32_to_f16(typingctx, x):
    def codegen(context, builder, sig, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return types.uint16(types.float32), codegen


@njit(nogil=True, cache=True, inline="always")
def _bf16_bits(x):
    """float32 -> bfloat16 bits, round to nearest even; a NaN stays a quiet NaN."""
    u = _as_u32(x)
    if (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):
        return np.uint16((u >> np.uint32(16)) | np.uint32(0x40))
    return np.uint16((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))


@njit(nogil=True, cache=True, inline="always")
def half_value(b, kind):
    """The float32 value of 16-bit float bits `b` (exact)."""
    if kind == F16:
        return _f16_to_f32(b)
    return _as_f32(np.uint32(b) << np.uint32(16))


@njit(nogil=True, cache=True, inline="always")
def half_bits(x, kind):
    """float32 -> 16-bit float bits, round to nearest even."""
    if kind == F16:
        return _f32_to_f16(x)
    return _bf16_bits(x)


@njit(nogil=True, cache=True, inline="always")
def _odd_f32(v):
    """float64 -> float32 rounded to odd (truncate, then set the last bit if inexact): float32 keeps 13 more
    bits than float16 and 16 more than bfloat16, so rounding this to nearest even is one rounding of v."""
    f = np.float32(v)
    if np.float64(f) == v or v != v:
        return f
    u = _as_u32(f)
    if abs(np.float64(f)) > abs(v):   # rounded away from zero: step back towards it
        u -= np.uint32(1)
    return _as_f32(u | np.uint32(1))


@njit(nogil=True, cache=True)
def from_half(x, out, kind, block_idx, block_dim):
    """out[i] = the 16-bit float x[i] (bits) in out's type (float32 exactly; ints truncate as astype)."""
    lo, hi = block_range(out.size, G, block_idx, block_dim)
    xs, ys = x[lo:hi], out[lo:hi]
    if kind == F16:
        for i in range(ys.size):
            ys[i] = _f16_to_f32(xs[i])
    else:
        for i in range(ys.size):
            ys[i] = _as_f32(np.uint32(xs[i]) << np.uint32(16))


@njit(nogil=True, cache=True)
def f32_to_half(x, out, kind, block_idx, block_dim):
    """out[i] = float32 x[i] as 16-bit float bits."""
    lo, hi = block_range(out.size, G, block_idx, block_dim)
    xs, ys = x[lo:hi], out[lo:hi]
    if kind == F16:
        for i in range(ys.size):
            ys[i] = _f32_to_f16(xs[i])
    else:
        for i in range(ys.size):
            ys[i] = _bf16_bits(xs[i])


@njit(nogil=True, cache=True)
def to_half(x, out, kind, block_idx, block_dim):
    """out[i] = x[i] (float64, ints, bool) as 16-bit float bits, rounded once from its float64 value."""
    lo, hi = block_range(out.size, G, block_idx, block_dim)
    for i in range(lo, hi):
        out[i] = half_bits(_odd_f32(np.float64(x[i])), kind)


@njit(nogil=True, cache=True)
def half_to_half(x, out, kin, kout, block_idx, block_dim):
    """One 16-bit float to the other, through float32 (exact), so rounded once."""
    lo, hi = block_range(out.size, G, block_idx, block_dim)
    for i in range(lo, hi):
        out[i] = half_bits(half_value(x[i], kin), kout)


# ops whose kernels read and write 16-bit feature maps themselves, converting in registers (conv_half.py,
# pool_half.py, vector_half.py): (op, domain) -> when(node) it holds; passes/drop_half_casts uses it
NATIVE16: dict = {}


def native16(op: str, domain: str = "", when=lambda attrs: True, on_node: bool = False) -> None:
    """Register op's 16-bit kernel for the nodes where when(attrs) holds, or when(node) with on_node (a
    test that needs the node's inputs, e.g. a conv's weight shape)."""
    NATIVE16[(op, domain)] = when if on_node else (lambda node: when(node.attrs))


# Runs for the 16-bit kernels (conv_half, pool_half): one loop per kind, so each vectorizes (a `kind` test
# inside the loop kept LLVM from it)

@njit(nogil=True, cache=True, inline="always")
def widen_run(x, xo, out, oo, n, kind):
    """out[oo:oo+n] = the 16-bit floats x[xo:xo+n] as float32."""
    a, b = np.uint64(xo), np.uint64(oo)
    if kind == F16:
        for i in range(np.uint64(n)):
            out[b + i] = _f16_to_f32(x[a + i])
    else:
        for i in range(np.uint64(n)):
            out[b + i] = _as_f32(np.uint32(x[a + i]) << np.uint32(16))


@njit(nogil=True, cache=True, inline="always")
def narrow_run(x, xo, out, oo, n, kind):
    """out[oo:oo+n] = float32 x[xo:xo+n] as 16-bit float bits."""
    a, b = np.uint64(xo), np.uint64(oo)
    if kind == F16:
        for i in range(np.uint64(n)):
            out[b + i] = _f32_to_f16(x[a + i])
    else:
        for i in range(np.uint64(n)):
            out[b + i] = _bf16_bits(x[a + i])


@njit(nogil=True, cache=True, inline="always")
def add_half_run(z, zo, acc, ao, n, s, kind):
    """acc[ao:ao+n] = (acc + s) + the 16-bit floats z[zo:zo+n]."""
    a, b = np.uint64(zo), np.uint64(ao)
    if kind == F16:
        for i in range(np.uint64(n)):
            acc[b + i] = acc[b + i] + s + _f16_to_f32(z[a + i])
    else:
        for i in range(np.uint64(n)):
            acc[b + i] = acc[b + i] + s + _as_f32(np.uint32(z[a + i]) << np.uint32(16))


@njit(nogil=True, cache=True, inline="always")
def narrow_act_run(acc, ao, y, yo, n, s, relu, kind):
    """y[yo:yo+n] = (acc[ao:ao+n] + s, then max(., 0) when relu) as 16-bit bits: epilogue's NONE / RELU and
    the rounding in one pass."""
    a, b, z = np.uint64(ao), np.uint64(yo), np.float32(0.0)
    if kind == F16:
        if relu:
            for i in range(np.uint64(n)):
                y[b + i] = _f32_to_f16(max(acc[a + i] + s, z))
        else:
            for i in range(np.uint64(n)):
                y[b + i] = _f32_to_f16(acc[a + i] + s)
    elif relu:
        for i in range(np.uint64(n)):
            y[b + i] = _bf16_bits(max(acc[a + i] + s, z))
    else:
        for i in range(np.uint64(n)):
            y[b + i] = _bf16_bits(acc[a + i] + s)

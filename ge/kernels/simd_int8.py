"""Explicit 512-bit integer vectors for the int8 GEMM (conv_vnni.py): AVX512-VNNI's vpdpbusd from Numba.

`IVec` is <16 x i32> (a zmm register). vpdpbusd multiplies the 4 unsigned bytes of each 32-bit lane of
one operand with the 4 signed bytes of the same lane of the other and adds the four products to the
lane's int32: 64 multiply-adds an instruction (LLVM's loop vectorizer never emits it from scalar loops:
measured 3.9 GMAC/s for gemm_int8.igemm on 64x576x3136).

    ivzero(arr)              zeros (arr only types the call)
    ivload(arr, i)           the 64 bytes of a uint8 / int8 array at element i, as 16 int32 lanes (of an
                             int32 array: arr[i:i+16])
    ivbcast4(arr, i)         the 4 bytes arr[i:i+4] of a uint8 / int8 array in every lane
    ivdpbusd(acc, u, s)      acc + the lane-wise dot products of u's unsigned and s's signed bytes
    ivstore(arr, i, v)       arr[i:i+16] = v for an int32 array
  the depthwise conv's and the requantization's (conv_depthwise_int8.py, conv_vnni.py, qnhwc.py):
    ivzext(arr, i)           the 16 bytes of a uint8 array at i, zero-extended to 16 int32 lanes
    ivsplat(x)               the integer x in every lane
    ivadd, ivsub, ivmul      lane-wise int32 a + b, a - b, a * b (low 32 bits)
    ivrequant(v, m, i, lo, hi, zo)  rint(clamp(float32(v) * m[i:i+16], lo, hi)) + zo: gemm_int8.requantize's
                             float32 steps (onnxruntime's) on 16 lanes
    ivstore_bytes(arr, i, v) arr[i:i+16] = the low bytes of v's lanes (a uint8 or int8 array)
    ivqadd(a, b, k, ...)     16 lanes of qnhwc.qadd's float32 steps on two byte images
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

_I32, _V = ir.IntType(32), ir.VectorType(ir.IntType(32), 16)


class IVec(types.Type):
    def __init__(self):
        super().__init__(name="IVec(int32x16)")


ivec = IVec()


@register_model(IVec)
class _IVecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _V)


def element_ptr(context, builder, aryty, ary, idx, to):
    """A pointer of LLVM type `to` at element idx of the array (for vector loads and stores)."""
    data = context.make_array(aryty)(context, builder, ary).data
    return builder.bitcast(builder.gep(data, [idx]), to.as_pointer())


def _splat(builder, x, vt):
    """The LLVM scalar x in every lane of a vector of type vt (16 lanes)."""
    v = builder.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(_I32, 0))
    return builder.shuffle_vector(v, ir.Constant(vt, ir.Undefined), ir.Constant(_V, [0] * 16))


def _bytes(arr):
    if not isinstance(arr, types.Array) or arr.dtype not in (types.uint8, types.int8):
        raise TypeError(f"simd_int8: expected a uint8 or int8 array, got {arr}")


@intrinsic
def ivzero(typingctx, arr):
    return ivec(arr), lambda context, builder, sig, args: ir.Constant(_V, None)


@intrinsic
def ivload(typingctx, arr, idx):
    if not isinstance(arr, types.Array) or arr.dtype not in (types.uint8, types.int8, types.int32):
        raise TypeError(f"simd_int8.ivload: expected a uint8, int8 or int32 array, got {arr}")

    def codegen(context, builder, sig, args):
        return builder.load(element_ptr(context, builder, arr, args[0], args[1], _V), align=1)
    return ivec(arr, idx), codegen


@intrinsic
def ivbcast4(typingctx, arr, idx):
    _bytes(arr)

    def codegen(context, builder, sig, args):
        return _splat(builder, builder.load(element_ptr(context, builder, arr, args[0], args[1], _I32), align=1), _V)
    return ivec(arr, idx), codegen


@intrinsic
def ivdpbusd(typingctx, acc, u, s):
    if not (acc == ivec and u == ivec and s == ivec):
        raise TypeError("simd_int8.ivdpbusd takes three IVec")

    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_V, [_V, _V, _V]),
                                            "llvm.x86.avx512.vpdpbusd.512")
        return builder.call(fn, list(args))
    return ivec(acc, u, s), codegen


@intrinsic
def ivstore(typingctx, arr, idx, v):
    if not isinstance(arr, types.Array) or arr.dtype != types.int32:
        raise TypeError(f"simd_int8.ivstore: expected an int32 array, got {arr}")

    def codegen(context, builder, sig, args):
        builder.store(args[2], element_ptr(context, builder, arr, args[0], args[1], _V), align=4)
        return context.get_dummy_value()
    return types.void(arr, idx, v), codegen


# -- int32 lanes and the requantization (conv_depthwise_int8.py, conv_vnni.py, qnhwc.py, matmul_int8.py) --

_F = ir.VectorType(ir.FloatType(), 16)
_B = ir.VectorType(ir.IntType(8), 16)


@intrinsic
def ivzext(typingctx, arr, idx):
    """The 16 bytes arr[idx:idx+16] of a uint8 array, zero-extended to 16 int32 lanes (vpmovzxbd)."""
    if not isinstance(arr, types.Array) or arr.dtype != types.uint8:
        raise TypeError(f"simd_int8.ivzext: expected a uint8 array, got {arr}")

    def codegen(context, builder, sig, args):
        return builder.zext(builder.load(element_ptr(context, builder, arr, args[0], args[1], _B), align=1), _V)
    return ivec(arr, idx), codegen


@intrinsic
def ivsplat(typingctx, x):
    """The int32 scalar x in every lane."""
    if not isinstance(x, types.Integer):
        raise TypeError("simd_int8.ivsplat takes an integer")

    def codegen(context, builder, sig, args):
        return _splat(builder, context.cast(builder, args[0], x, types.int32), _V)
    return ivec(x), codegen


def _lanewise(name, emit):
    def typer(typingctx, a, b):
        if not (a == ivec and b == ivec):
            raise TypeError(f"simd_int8.{name} takes two IVec")
        return ivec(a, b), lambda context, builder, sig, args: emit(builder)(args[0], args[1])
    typer.__name__ = name
    return intrinsic(typer)


ivadd = _lanewise("ivadd", lambda b: b.add)
ivsub = _lanewise("ivsub", lambda b: b.sub)
ivmul = _lanewise("ivmul", lambda b: b.mul)   # the low 32 bits of each product (vpmulld)


@intrinsic
def ivrequant(typingctx, v, mult, mi, lo, hi, zo):
    """16 lanes of rint(clamp(float32(v) * mult[mi:mi+16], lo, hi)) + zo (float32 mult array, lo / hi
    float32, zo int32): gemm_int8.requantize's float32 steps, onnxruntime's, on 16 sums at once."""
    if v != ivec or not isinstance(mult, types.Array) or mult.dtype != types.float32:
        raise TypeError("simd_int8.ivrequant takes an IVec and a float32 array")

    def codegen(context, builder, sig, args):
        x, m = builder.sitofp(args[0], _F), builder.load(element_ptr(context, builder, mult, args[1], args[2], _F),
                                                       align=4)
        f = builder.fmul(x, m)
        lo_v, hi_v = _fsplat(context, builder, args[3], sig.args[3]), _fsplat(context, builder, args[4], sig.args[4])
        f = builder.select(builder.fcmp_ordered(">", f, lo_v), f, lo_v)   # max(f, lo), as Python's max
        f = builder.select(builder.fcmp_ordered("<", f, hi_v), f, hi_v)   # min(f, hi)
        zo = _splat(builder, context.cast(builder, args[5], sig.args[5], types.int32), _V)
        return builder.add(builder.fptosi(_rint(builder, f), _V), zo)
    return ivec(v, mult, mi, lo, hi, zo), codegen


def _fsplat(context, builder, val, ty):
    return _splat(builder, context.cast(builder, val, ty, types.float32), _F)


def _rint(builder, f):
    """Rounded to the nearest integer, ties to even (the default rounding mode; vrndscaleps)."""
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_F, [_F]), "llvm.rint.v16f32")
    return builder.call(fn, [f])


@intrinsic
def ivqadd(typingctx, a, b, k, a_off, za, sa, b_off, zb, sb, sy, zy, qlo, qhi, relu):
    """16 lanes of qnhwc.qadd: Q([Relu](DQ(a) + DQ(b))) from the shifted bytes a[k:k+16], b[k:k+16] in its
    float32 steps ((a - a_off - za) * sa + (b - b_off - zb) * sb, max with 0 when relu, rint(s / sy) + zy
    clamped to [qlo, qhi]), as int32 lanes."""
    if not all(isinstance(t, types.Array) and t.dtype == types.uint8 for t in (a, b)):
        raise TypeError("simd_int8.ivqadd takes two uint8 arrays")

    def codegen(context, builder, sig, args):
        ty = sig.args
        f = [_fsplat(context, builder, args[i], ty[i]) for i in (4, 5, 7, 8, 9, 10, 11, 12)]
        za_, sa_, zb_, sb_, sy_, zy_, lo_, hi_ = f

        def dq(i, aty, o, zp, sc):
            x = builder.zext(builder.load(element_ptr(context, builder, aty, args[i], args[2], _B), align=1), _V)
            x = builder.sub(x, _splat(builder, context.cast(builder, args[o], ty[o], types.int32), _V))
            return builder.fmul(builder.fsub(builder.sitofp(x, _F), zp), sc)
        s = builder.fadd(dq(0, a, 3, za_, sa_), dq(1, b, 6, zb_, sb_))
        zero = ir.Constant(_F, None)
        relu_on = builder.icmp_signed("!=", args[13], ir.Constant(args[13].type, 0))
        s = builder.select(relu_on, builder.select(builder.fcmp_ordered(">", zero, s), zero, s), s)
        v = builder.fadd(_rint(builder, builder.fdiv(s, sy_)), zy_)
        v = builder.select(builder.fcmp_ordered(">", lo_, v), lo_, v)   # max(v, qlo)
        v = builder.select(builder.fcmp_ordered("<", hi_, v), hi_, v)   # min(v, qhi)
        return builder.fptosi(v, _V)
    return ivec(a, b, k, a_off, za, sa, b_off, zb, sb, sy, zy, qlo, qhi, relu), codegen


@intrinsic
def ivstore_bytes(typingctx, arr, idx, v):
    """arr[idx:idx+16] = the low bytes of v's lanes (vpmovdb) for a uint8 or int8 array."""
    _bytes(arr)
    if v != ivec:
        raise TypeError("simd_int8.ivstore_bytes stores an IVec")

    def codegen(context, builder, sig, args):
        builder.store(builder.trunc(args[2], _B), element_ptr(context, builder, arr, args[0], args[1], _B), align=1)
        return context.get_dummy_value()
    return types.void(arr, idx, v), codegen

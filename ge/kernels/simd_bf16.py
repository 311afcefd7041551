"""Explicit 512-bit float vectors for the bfloat16 conv (conv_bf16.py): AVX512-BF16's vdpbf16ps from Numba.

`BVec` is <16 x float> (a zmm register of float32 accumulators). vdpbf16ps multiplies the 2 bfloat16 of
each 32-bit lane of one operand with the 2 of the same lane of the other and adds both products to the
lane's float32: 32 multiply-adds an instruction, twice a float32 FMA's. bfloat16 operands are read as the
uint16 bits ge keeps them in (half.py), two a lane. llvmlite has no `bfloat` type: `_BFloat` prints it,
so the intrinsic is called by its LLVM signature (LLVM >= 17: <32 x bfloat> operands).

    bvzero(arr)               zeros (arr only types the call)
    bvload2(arr, i)           the 32 uint16 arr[i:i+32] as 16 lanes of bfloat16 pairs
    bvbcast2(arr, i)          the pair arr[i:i+2] of a uint16 array in every lane
    bvdot(acc, a, b)          acc + the lane-wise dot products of a's and b's bfloat16 pairs
    bvstore32(arr, i, a, b, n)  arr[i:i+n] = the first n (<= 32) lanes of a then b, rounded to bfloat16
                              (nearest even, NaNs quiet: half.py's rule), for a uint16 array; one 64-byte
                              store, masked when n < 32
    bvadd_bf16(v, arr, i)     v + the 16 bfloat16 arr[i:i+16] (widened exactly)
    bvbias_relu(v, b, relu)   v + b in every lane, then max(., 0) when relu
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

from .simd_int8 import element_ptr

_I16, _I32, _F32 = ir.IntType(16), ir.IntType(32), ir.FloatType()
_V, _VI, _VH = ir.VectorType(_F32, 16), ir.VectorType(_I32, 16), ir.VectorType(_I16, 16)


class _BFloat(ir.Type):
    def _to_string(self):
        return "bfloat"


_VB = ir.VectorType(_BFloat(), 32)


class BVec(types.Type):
    def __init__(self):
        super().__init__(name="BVec(float32x16)")


bvec = BVec()


@register_model(BVec)
class _BVecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _V)


def _check(arr, dtype, what):
    if not isinstance(arr, types.Array) or arr.dtype != dtype:
        raise TypeError(f"simd_bf16.{what}: expected a {dtype} array, got {arr}")


@intrinsic
def bvzero(typingctx, arr):
    return bvec(arr), lambda context, builder, sig, args: ir.Constant(_V, None)


@intrinsic
def bvload2(typingctx, arr, idx):
    _check(arr, types.uint16, "bvload2")

    def codegen(context, builder, sig, args):
        return builder.load(element_ptr(context, builder, arr, args[0], args[1], _V), align=2)
    return bvec(arr, idx), codegen


@intrinsic
def bvbcast2(typingctx, arr, idx):
    _check(arr, types.uint16, "bvbcast2")

    def codegen(context, builder, sig, args):
        x = builder.load(element_ptr(context, builder, arr, args[0], args[1], _F32), align=2)
        v = builder.insert_element(ir.Constant(_V, ir.Undefined), x, ir.Constant(_I32, 0))
        return builder.shuffle_vector(v, ir.Constant(_V, ir.Undefined), ir.Constant(_VI, [0] * 16))
    return bvec(arr, idx), codegen


@intrinsic
def bvdot(typingctx, acc, a, b):
    if not (acc == bvec and a == bvec and b == bvec):
        raise TypeError("simd_bf16.bvdot takes three BVec")

    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_V, [_V, _VB, _VB]),
                                            "llvm.x86.avx512bf16.dpbf16ps.512")
        return builder.call(fn, [args[0], builder.bitcast(args[1], _VB), builder.bitcast(args[2], _VB)])
    return bvec(acc, a, b), codegen


def _round_bf16(builder, v):
    """<16 x i16>: v rounded to bfloat16, nearest even; NaNs stay quiet NaNs (half.py's rule)."""
    u = builder.bitcast(v, _VI)

    def splat(k):
        return ir.Constant(_VI, [k] * 16)
    odd = builder.and_(builder.lshr(u, splat(16)), splat(1))
    r = builder.lshr(builder.add(builder.add(u, splat(0x7FFF)), odd), splat(16))
    nan = builder.fcmp_unordered("uno", v, v)
    r = builder.select(nan, builder.or_(builder.lshr(u, splat(16)), splat(0x40)), r)
    return builder.trunc(r, _VH)


@intrinsic
def bvstore32(typingctx, arr, idx, v0, v1, n):
    _check(arr, types.uint16, "bvstore32")

    def codegen(context, builder, sig, args):
        ary, i, a, b, cnt = args
        h = builder.shuffle_vector(_round_bf16(builder, a), _round_bf16(builder, b),
                                   ir.Constant(ir.VectorType(_I32, 32), list(range(32))))
        data = context.make_array(arr)(context, builder, ary).data
        full = builder.icmp_signed(">=", cnt, ir.Constant(cnt.type, 32))
        with builder.if_else(full) as (then, other):
            with then:
                builder.store(h, builder.bitcast(builder.gep(data, [i]), ir.VectorType(_I16, 32).as_pointer()), align=2)
            with other:  # a tail: a masked store of the first n lanes
                v32 = ir.VectorType(_I32, 32)
                lanes = builder.trunc(cnt, _I32)
                splat = builder.shuffle_vector(builder.insert_element(ir.Constant(v32, ir.Undefined), lanes,
                                                                      ir.Constant(_I32, 0)),
                                               ir.Constant(v32, ir.Undefined), ir.Constant(v32, [0] * 32))
                mask = builder.icmp_signed("<", ir.Constant(v32, list(range(32))), splat)
                vh = ir.VectorType(_I16, 32)
                fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
                    ir.VoidType(), [vh, vh.as_pointer(), _I32, ir.VectorType(ir.IntType(1), 32)]),
                    "llvm.masked.store.v32i16.p0")
                builder.call(fn, [h, builder.bitcast(builder.gep(data, [i]), vh.as_pointer()), ir.Constant(_I32, 2),
                                  mask])
        return context.get_dummy_value()
    return types.void(arr, idx, v0, v1, n), codegen


@intrinsic
def bvadd_bf16(typingctx, v, arr, idx):
    _check(arr, types.uint16, "bvadd_bf16")

    def codegen(context, builder, sig, args):
        h = builder.load(element_ptr(context, builder, arr, args[1], args[2], _VH), align=2)
        wide = builder.shl(builder.zext(h, _VI), ir.Constant(_VI, [16] * 16))
        return builder.fadd(args[0], builder.bitcast(wide, _V))
    return bvec(v, arr, idx), codegen


@intrinsic
def bvbias_relu(typingctx, v, b, relu):
    def codegen(context, builder, sig, args):
        vec, bias, r = args
        bias = context.cast(builder, bias, sig.args[1], types.float32)
        s = builder.insert_element(ir.Constant(_V, ir.Undefined), bias, ir.Constant(_I32, 0))
        out = builder.fadd(vec, builder.shuffle_vector(s, ir.Constant(_V, ir.Undefined), ir.Constant(_VI, [0] * 16)))
        pos = builder.fcmp_ordered(">", out, ir.Constant(_V, None))
        clamped = builder.select(pos, out, ir.Constant(_V, None))
        return builder.select(builder.icmp_signed("!=", r, ir.Constant(r.type, 0)), clamped, out)
    return bvec(v, b, relu), codegen

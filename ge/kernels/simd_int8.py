"""Explicit 512-bit integer vectors for the int8 GEMM (conv_vnni.py): AVX512-VNNI's vpdpbusd from Numba.

`IVec` is <16 x i32> (a zmm register). vpdpbusd multiplies the 4 unsigned bytes of each 32-bit lane of
one operand with the 4 signed bytes of the same lane of the other and adds the four products to the
lane's int32: 64 multiply-adds an instruction (LLVM's loop vectorizer never emits it from scalar loops:
measured 3.9 GMAC/s for gemm_int8.igemm on 64x576x3136).

    ivzero(arr)              zeros (arr only types the call)
    ivload(arr, i)           the 64 bytes of a uint8 / int8 array at element i, as 16 int32 lanes
    ivbcast4(arr, i)         the 4 bytes arr[i:i+4] of a uint8 / int8 array in every lane
    ivdpbusd(acc, u, s)      acc + the lane-wise dot products of u's unsigned and s's signed bytes
    ivstore(arr, i, v)       arr[i:i+16] = v for an int32 array
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


def _bytes(arr):
    if not isinstance(arr, types.Array) or arr.dtype not in (types.uint8, types.int8):
        raise TypeError(f"simd_int8: expected a uint8 or int8 array, got {arr}")


@intrinsic
def ivzero(typingctx, arr):
    return ivec(arr), lambda context, builder, sig, args: ir.Constant(_V, None)


@intrinsic
def ivload(typingctx, arr, idx):
    _bytes(arr)

    def codegen(context, builder, sig, args):
        return builder.load(element_ptr(context, builder, arr, args[0], args[1], _V), align=1)
    return ivec(arr, idx), codegen


@intrinsic
def ivbcast4(typingctx, arr, idx):
    _bytes(arr)

    def codegen(context, builder, sig, args):
        x = builder.load(element_ptr(context, builder, arr, args[0], args[1], _I32), align=1)
        v = builder.insert_element(ir.Constant(_V, ir.Undefined), x, ir.Constant(_I32, 0))
        return builder.shuffle_vector(v, ir.Constant(_V, ir.Undefined), ir.Constant(_V, [0] * 16))
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

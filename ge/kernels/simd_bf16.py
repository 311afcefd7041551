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
    bvepilogue(y, i, a, b, bias, z, zi, has_z, relu, n)
                              the conv's epilogue in one op: y[i:i+n] = the first n (<= 32) lanes of a then b,
                              + bias, + the bfloat16 z[zi:zi+n] when has_z, max(., 0) when relu, rounded to
                              bfloat16 by vcvtneps2bf16 (nearest even, NaNs quiet; float32 denormals flush to
                              0, as vdpbf16ps reads bfloat16 denormals as 0); one 64-byte store, masked (and
                              z's loads masked) when n < 32, so nothing past n is read or written. One op,
                              not Numba functions: those take arrays, and Numba counts their references
                              (atomic calls every tile, conv_bf16.py's measures)
    bvstore2(y, i, a, b, n)   the first n (<= 32) lanes of a then b into the float32 y[i:i+n] (masked when
                              n < 32): the raw sums of gemm_bf16.py, whose epilogue is the float32 path's
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


def _splat(builder, x, vt):
    v = builder.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(_I32, 0))
    return builder.shuffle_vector(v, ir.Constant(vt, ir.Undefined), ir.Constant(ir.VectorType(_I32, vt.count),
                                                                                [0] * vt.count))


def _lanes_below(builder, cnt, lanes, first):
    """<lanes x i1>: lane i set when first + i < cnt."""
    vt = ir.VectorType(_I32, lanes)
    c = builder.sub(builder.trunc(cnt, _I32), ir.Constant(_I32, first))
    return builder.icmp_signed("<", ir.Constant(vt, list(range(lanes))), _splat(builder, c, vt))


def _widen_z(context, builder, zty, zary, zi, cnt, full):
    """The two <16 x float> of the bfloat16 z[zi:zi+32] (lanes past cnt: 0, not read unless full)."""
    data = context.make_array(zty)(context, builder, zary).data
    ptrs = [builder.bitcast(builder.gep(data, [builder.add(zi, ir.Constant(zi.type, k))]), _VH.as_pointer())
            for k in (0, 16)]
    masked = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
        _VH, [_VH.as_pointer(), _I32, ir.VectorType(ir.IntType(1), 16), _VH]), "llvm.masked.load.v16i16.p0")
    with builder.if_else(full) as (then, other):
        with then:
            whole = [builder.load(p, align=2) for p in ptrs]
            from_whole = builder.block
        with other:
            part = [builder.call(masked, [p, ir.Constant(_I32, 2), _lanes_below(builder, cnt, 16, k),
                                          ir.Constant(_VH, None)]) for p, k in zip(ptrs, (0, 16))]
            from_part = builder.block
    phis = [builder.phi(_VH), builder.phi(_VH)]  # both first: phis head their block
    for h, w, m in zip(phis, whole, part):
        h.add_incoming(w, from_whole)
        h.add_incoming(m, from_part)
    return [builder.bitcast(builder.shl(builder.zext(h, _VI), ir.Constant(_VI, [16] * 16)), _V) for h in phis]


@intrinsic
def bvepilogue(typingctx, y, yi, a, b, bias, z, zi, has_z, relu, n):
    _check(y, types.uint16, "bvepilogue")
    _check(z, types.uint16, "bvepilogue")

    def codegen(context, builder, sig, args):
        yary, i, a, b, bias, zary, zi, hz, r, cnt = args
        bv = _splat(builder, context.cast(builder, bias, sig.args[4], types.float32), _V)
        a, b = builder.fadd(a, bv), builder.fadd(b, bv)
        full = builder.icmp_signed(">=", cnt, ir.Constant(cnt.type, 32))
        before = builder.block
        with builder.if_then(builder.icmp_signed("!=", hz, ir.Constant(hz.type, 0))):
            z0, z1 = _widen_z(context, builder, sig.args[5], zary, zi, cnt, full)
            az, bz = builder.fadd(a, z0), builder.fadd(b, z1)
            with_z = builder.block
        pa, pb = builder.phi(_V), builder.phi(_V)
        for phi, plain, added in ((pa, a, az), (pb, b, bz)):
            phi.add_incoming(plain, before)
            phi.add_incoming(added, with_z)
        zero, on = ir.Constant(_V, None), builder.icmp_signed("!=", r, ir.Constant(r.type, 0))
        a, b = (builder.select(on, builder.select(builder.fcmp_ordered(">", v, zero), v, zero), v) for v in (pa, pb))
        vh = ir.VectorType(_I16, 32)
        h = builder.bitcast(builder.fptrunc(builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(_I32, 32),
                                                                                     list(range(32)))), _VB), vh)
        data = context.make_array(sig.args[0])(context, builder, yary).data
        ptr = builder.bitcast(builder.gep(data, [i]), vh.as_pointer())
        _store(builder, h, ptr, cnt, full, "v32i16", 2)
        return context.get_dummy_value()
    return types.void(y, yi, a, b, bias, z, zi, has_z, relu, n), codegen


def _store(builder, vec, ptr, cnt, full, name, align):
    """vec at ptr when `full`, else its first cnt lanes (llvm.masked.store.<name>)."""
    lanes = vec.type.count
    with builder.if_else(full) as (then, other):
        with then:
            builder.store(vec, ptr, align=align)
        with other:
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
                ir.VoidType(), [vec.type, vec.type.as_pointer(), _I32, ir.VectorType(ir.IntType(1), lanes)]),
                f"llvm.masked.store.{name}.p0")
            builder.call(fn, [vec, ptr, ir.Constant(_I32, align), _lanes_below(builder, cnt, lanes, 0)])



@intrinsic
def bvstore2(typingctx, y, yi, a, b, n):
    _check(y, types.float32, "bvstore2")

    def codegen(context, builder, sig, args):
        yary, i, a, b, cnt = args
        v = builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(_I32, 32), list(range(32))))
        ptr = element_ptr(context, builder, sig.args[0], yary, i, v.type)
        _store(builder, v, ptr, cnt, builder.icmp_signed(">=", cnt, ir.Constant(cnt.type, 32)), "v32f32", 4)
        return context.get_dummy_value()
    return types.void(y, yi, a, b, n), codegen

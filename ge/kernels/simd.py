"""Explicit 512-bit vectors for the GEMM micro-kernel (gemm.py): a Numba type and six intrinsics.

LLVM's loop vectorizer only vectorizes innermost loops, so a C tile cannot stay in registers across the
k loop when the kernel is written with scalar loops (each k step reloads and stores C). These intrinsics
let a kernel hold vectors in plain local variables: `Vec` is <16 x float> for float32 arrays and
<8 x double> for float64 ones (the lane count follows the array's dtype, so one kernel source serves both
and each dtype is still one specialization); LLVM maps them to zmm registers (two ymm halves without
AVX-512).

    vlanes(arr)              lanes of arr's dtype, a compile-time constant
    vload(arr, i)            arr[i:i+lanes]                      (unaligned; no bounds check)
    vload_n(arr, i, n)       arr[i:i+n] in the first n lanes, zeros after (masked: nothing outside the array
                             is read; AVX2 reads a whole vector that lies inside it and blends)
    vload_in(arr, i, lo, hi, fill)  lanes [lo, hi) from arr[i+lo:i+hi], `fill` in the others (masked the
                             same way, so i may lie before the array's start)
    vstore(arr, i, v)        arr[i:i+lanes] = v
    vstore_n(arr, i, v, n)   arr[i:i+n] = v[:n]                  (masked; nothing else is written)
    vstore_until(arr, i, v, n, end)  vstore_n, or the whole vector when it ends by `end`: for rows stored in
                             order, whose lanes past n land where a later store writes
    vload_span(arr, o, s, size, fill)  arr[o+s : o+s+lanes] within the run arr[o : o+size], fill outside
    vbcast(arr, i)           arr[i] in every lane
    vzero(arr)               zeros
    vsplat(arr, x)           x (a scalar, converted to arr's dtype) in every lane
    vfma(a, b, c)            a*b + c per lane, one rounding (llvm.fma)
    vadd(a, b), vmul(a, b)   a + b, a * b per lane
    vmax(m, v)               v where v > m, else m, per lane (a NaN in v never replaces m, as `v if v > m else m`)
    vmin(m, v)               v where v < m, else m (so vmax(x, lo) is Python's max(x, lo), vmin(x, hi) min(x, hi))
    veven(a, b), vodd(a, b)  the even (odd) lanes of a then b: a stride-2 row split into its two phases
    vnext1(a, b) .. vnext6   lanes k.. of a, then b's first k (k = 1..6): a row moved on by k columns, its
                             next vector supplying the end (one valignd)
    vtrans8(r0, ..., r7)     8 vectors (rows r, lanes m) -> 8 vectors t: t[j] lane d = r[d % 8] lane
                             j*(lanes//8) + d//8 (float64: the transpose; float32: channels 2j, 2j+1 in halves)
    vstore_hi(arr, i, v, n)  arr[i:i+n] = v[lanes/2 : lanes/2+n]   (masked)
    vlo(a, b), vhi(a, b)     the low (high) halves of a and b, one after the other
    vsum(v)                  the lanes' sum, added in lane order (an ordered reduction: the same bits always)
"""
from __future__ import annotations

import functools

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

_I32, _I64 = ir.IntType(32), ir.IntType(64)


@functools.lru_cache(maxsize=None)
def _host() -> tuple[str, str]:
    """(LLVM's name for this CPU, its feature string), ("", "") when the host cannot be queried; asked once."""
    import llvmlite.binding as llvm
    try:
        llvm.initialize_native_target()
        return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    except Exception:
        return "", ""


def host_has(feature: str) -> bool:
    """Whether this CPU has an LLVM feature ("avx512f", "avx512vnni", "avx512bf16"): kernels choose their
    register tiles and instructions by it at import (Numba's cache is per CPU, so a cached kernel never
    meets another CPU's choice). False when the host cannot be queried: the portable path."""
    return f"+{feature}" in _host()[1]


def host_cpu() -> str:
    """LLVM's name for this CPU ("znver4", "rocketlake"), "" when the host cannot be queried: for the few
    choices measured to differ between CPUs with the same features."""
    return _host()[0]


# AVX-512 loads and stores under a mask in one instruction; AVX2's vmaskmovps is slow (see _load_masked)
NATIVE_MASKS = host_has("avx512f")


def _i64(builder, v):
    """An integer value widened to i64."""
    return builder.sext(v, _I64) if v.type.width < 64 else v


class Vec(types.Type):
    """One 64-byte vector of a float dtype."""
    def __init__(self, dtype):
        self.dtype = dtype
        self.lanes = 64 // (dtype.bitwidth // 8)
        super().__init__(name=f"Vec({dtype}x{self.lanes})")


@register_model(Vec)
class _VecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        elem = ir.FloatType() if fe_type.dtype == types.float32 else ir.DoubleType()
        super().__init__(dmm, fe_type, ir.VectorType(elem, fe_type.lanes))


def _vec_ptr(context, builder, aryty, ary, idx, vt):
    data = context.make_array(aryty)(context, builder, ary).data
    return builder.bitcast(builder.gep(data, [idx]), vt.as_pointer())


def _mask(builder, lanes, n):
    """<lanes x i1>: lane < n."""
    n = _i64(builder, n)
    zero, full = ir.Constant(_I64, 0), ir.Constant(_I64, lanes)
    n = builder.select(builder.icmp_signed("<", n, zero), zero, n)   # clamped to [0, lanes]: compared in i32,
    n = builder.trunc(builder.select(builder.icmp_signed(">", n, full), full, n), _I32)  # half the work of i64
    vt = ir.VectorType(_I32, lanes)
    nv = builder.insert_element(ir.Constant(vt, ir.Undefined), n, ir.Constant(_I32, 0))
    nv = builder.shuffle_vector(nv, ir.Constant(vt, ir.Undefined), ir.Constant(vt, [0] * lanes))
    return builder.icmp_signed("<", ir.Constant(vt, list(range(lanes))), nv)


def _masked(builder, name, vec, ret, params):
    suffix = f"v{vec.lanes}f{vec.dtype.bitwidth}"
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(ret, params),
                                          f"llvm.masked.{name}.{suffix}.p0{suffix}")


def _load_masked(context, builder, aryty, ary, idx, vec, mask, fill, full):
    """lanes of `mask` from ary[idx:idx+lanes], `fill` in the others; `full`: an i1, true when the mask is
    all lanes. AVX-512 loads under a mask natively. AVX2's vmaskmovps took twice as long as a plain load
    (AMD EPYC: the depthwise row copy 0.109 -> 0.058 ms on 144 x 56 x 56), so there a full mask is a plain
    load, and a vector lying inside the array a plain load and a blend (its other lanes read, never used)."""
    vt = context.get_value_type(vec)
    ptr = _vec_ptr(context, builder, aryty, ary, idx, vt)
    fn = _masked(builder, "load", vec, vt, [vt.as_pointer(), _I32, ir.VectorType(ir.IntType(1), vec.lanes), vt])
    if NATIVE_MASKS:
        return builder.call(fn, [ptr, ir.Constant(_I32, 4), mask, fill])
    nitems = context.make_array(aryty)(context, builder, ary).nitems
    i = _i64(builder, idx)
    inside = builder.and_(builder.icmp_signed(">=", i, ir.Constant(_I64, 0)),
                          builder.icmp_signed("<=", builder.add(i, ir.Constant(_I64, vec.lanes)), nitems))
    with builder.if_else(builder.or_(full, inside), likely=True) as (plain, part):
        with plain:
            whole = builder.load(ptr, align=4)
            blended = builder.select(full, whole, builder.select(mask, whole, fill))
            plain_end = builder.block
        with part:
            masked = builder.call(fn, [ptr, ir.Constant(_I32, 4), mask, fill])
            part_end = builder.block
    out = builder.phi(vt)
    out.add_incoming(blended, plain_end)
    out.add_incoming(masked, part_end)
    return out


def _check_float_array(arr):
    if not isinstance(arr, types.Array) or arr.dtype not in (types.float32, types.float64):
        raise TypeError(f"simd: expected a float32 or float64 array, got {arr}")


@intrinsic
def vlanes(typingctx, arr):
    _check_float_array(arr)
    n = 64 // (arr.dtype.bitwidth // 8)
    return types.int64(arr), lambda context, builder, sig, args: ir.Constant(_I64, n)


@intrinsic
def vload(typingctx, arr, idx):
    _check_float_array(arr)
    vec = Vec(arr.dtype)

    def codegen(context, builder, sig, args):
        vt = context.get_value_type(vec)
        return builder.load(_vec_ptr(context, builder, arr, args[0], args[1], vt), align=4)
    return vec(arr, idx), codegen


@intrinsic
def vload_n(typingctx, arr, idx, n):
    _check_float_array(arr)
    vec = Vec(arr.dtype)

    def codegen(context, builder, sig, args):
        vt = context.get_value_type(vec)
        full = builder.icmp_signed(">=", args[2], ir.Constant(args[2].type, vec.lanes))
        return _load_masked(context, builder, arr, args[0], args[1], vec, _mask(builder, vec.lanes, args[2]),
                            ir.Constant(vt, None), full)
    return vec(arr, idx, n), codegen


@intrinsic
def vload_in(typingctx, arr, idx, lo, hi, fill):
    _check_float_array(arr)
    vec = Vec(arr.dtype)

    def codegen(context, builder, sig, args):
        vt = context.get_value_type(vec)
        lo_v = _mask(builder, vec.lanes, args[2])   # lane < lo
        hi_v = _mask(builder, vec.lanes, args[3])   # lane < hi
        mask = builder.and_(hi_v, builder.not_(lo_v))
        v = context.cast(builder, args[4], sig.args[4], arr.dtype)
        splat = builder.insert_element(ir.Constant(vt, ir.Undefined), v, ir.Constant(_I32, 0))
        splat = builder.shuffle_vector(splat, ir.Constant(vt, ir.Undefined),
                                       ir.Constant(ir.VectorType(_I32, vec.lanes), [0] * vec.lanes))
        full = builder.and_(builder.icmp_signed("<=", args[2], ir.Constant(args[2].type, 0)),
                            builder.icmp_signed(">=", args[3], ir.Constant(args[3].type, vec.lanes)))
        return _load_masked(context, builder, arr, args[0], args[1], vec, mask, splat, full)
    return vec(arr, idx, lo, hi, fill), codegen


@intrinsic
def vstore(typingctx, arr, idx, v):
    _check_float_array(arr)

    def codegen(context, builder, sig, args):
        vt = context.get_value_type(v)
        builder.store(args[2], _vec_ptr(context, builder, arr, args[0], args[1], vt), align=4)
        return context.get_dummy_value()
    return types.none(arr, idx, v), codegen


@intrinsic
def vstore_n(typingctx, arr, idx, v, n):
    _check_float_array(arr)

    def codegen(context, builder, sig, args):
        vt = context.get_value_type(v)
        fn = _masked(builder, "store", v, ir.VoidType(),
                     [vt, vt.as_pointer(), _I32, ir.VectorType(ir.IntType(1), v.lanes)])
        ptr, mask = _vec_ptr(context, builder, arr, args[0], args[1], vt), _mask(builder, v.lanes, args[3])
        if NATIVE_MASKS:
            builder.call(fn, [args[2], ptr, ir.Constant(_I32, 4), mask])
            return context.get_dummy_value()
        # AVX2's masked store (vmaskmovps) is slow on AMD: a whole vector is a plain store (depthwise 144 x 56
        # x 56 3x3, whose rows end in whole vectors but one: 0.620 -> 0.474 ms); never load-blend-store, which
        # would race with the block writing the next lanes
        n = _i64(builder, args[3])
        with builder.if_else(builder.icmp_signed(">=", n, ir.Constant(_I64, v.lanes)), likely=True) as (whole, part):
            with whole:
                builder.store(args[2], ptr, align=4)
            with part:
                builder.call(fn, [args[2], ptr, ir.Constant(_I32, 4), mask])
        return context.get_dummy_value()
    return types.none(arr, idx, v, n), codegen


@intrinsic
def vbcast(typingctx, arr, idx):
    _check_float_array(arr)
    vec = Vec(arr.dtype)

    def codegen(context, builder, sig, args):
        vt = context.get_value_type(vec)
        data = context.make_array(arr)(context, builder, args[0]).data
        v = builder.insert_element(ir.Constant(vt, ir.Undefined), builder.load(builder.gep(data, [args[1]])),
                                   ir.Constant(_I32, 0))
        return builder.shuffle_vector(v, ir.Constant(vt, ir.Undefined),
                                      ir.Constant(ir.VectorType(_I32, vec.lanes), [0] * vec.lanes))
    return vec(arr, idx), codegen


@intrinsic
def vzero(typingctx, arr):
    _check_float_array(arr)
    vec = Vec(arr.dtype)
    return vec(arr), lambda context, builder, sig, args: ir.Constant(context.get_value_type(vec), None)


@intrinsic
def vsplat(typingctx, arr, x):
    _check_float_array(arr)
    vec = Vec(arr.dtype)

    def codegen(context, builder, sig, args):
        vt = context.get_value_type(vec)
        v = context.cast(builder, args[1], sig.args[1], arr.dtype)
        v = builder.insert_element(ir.Constant(vt, ir.Undefined), v, ir.Constant(_I32, 0))
        return builder.shuffle_vector(v, ir.Constant(vt, ir.Undefined),
                                      ir.Constant(ir.VectorType(_I32, vec.lanes), [0] * vec.lanes))
    return vec(arr, x), codegen


@intrinsic
def vfma(typingctx, a, b, c):
    if not (isinstance(a, Vec) and a == b == c):
        raise TypeError(f"vfma: expected three equal Vec types, got {a}, {b}, {c}")

    def codegen(context, builder, sig, args):
        vt = context.get_value_type(a)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]),
                                            f"llvm.fma.v{a.lanes}f{a.dtype.bitwidth}")
        return builder.call(fn, args)
    return a(a, b, c), codegen


def _binary(name: str, emit):
    def typer(typingctx, a, b):
        if not (isinstance(a, Vec) and a == b):
            raise TypeError(f"{name}: expected two equal Vec types, got {a}, {b}")
        return a(a, b), lambda context, builder, sig, args: emit(builder, *args)
    typer.__name__ = name
    return intrinsic(typer)


vadd = _binary("vadd", lambda builder, a, b: builder.fadd(a, b))
vmul = _binary("vmul", lambda builder, a, b: builder.fmul(a, b))
vmax = _binary("vmax", lambda builder, m, v: builder.select(builder.fcmp_ordered(">", v, m), v, m))
vmin = _binary("vmin", lambda builder, m, v: builder.select(builder.fcmp_ordered("<", v, m), v, m))


@intrinsic
def vpick(typingctx, m, a, b):
    """Lane by lane, a where m > 0, else b (m a vector of 1s and 0s: a mask kept as floats)."""
    if not (isinstance(m, Vec) and m == a == b):
        raise TypeError(f"vpick: expected three equal Vec types, got {m}, {a}, {b}")

    def codegen(context, builder, sig, args):
        zero = ir.Constant(context.get_value_type(m), None)
        return builder.select(builder.fcmp_ordered(">", args[0], zero), args[1], args[2])
    return a(m, a, b), codegen


def _lanes_of_pair(name: str, first: int):
    def typer(typingctx, a, b):
        if not (isinstance(a, Vec) and a == b):
            raise TypeError(f"{name}: expected two equal Vec types, got {a}, {b}")

        def codegen(context, builder, sig, args):
            picks = ir.Constant(ir.VectorType(_I32, a.lanes), list(range(first, 2 * a.lanes, 2)))
            return builder.shuffle_vector(args[0], args[1], picks)
        return a(a, b), codegen
    typer.__name__ = name
    return intrinsic(typer)


veven = _lanes_of_pair("veven", 0)
vodd = _lanes_of_pair("vodd", 1)


def _next_of_pair(name: str, k: int):
    def typer(typingctx, a, b):
        if not (isinstance(a, Vec) and a == b):
            raise TypeError(f"{name}: expected two equal Vec types, got {a}, {b}")

        def codegen(context, builder, sig, args):
            first = k if k >= 0 else a.lanes + k   # k < 0: a's last -k lanes, then b's first
            picks = ir.Constant(ir.VectorType(_I32, a.lanes), list(range(first, a.lanes + first)))
            return builder.shuffle_vector(args[0], args[1], picks)
        return a(a, b), codegen
    typer.__name__ = name
    return intrinsic(typer)


vprev1 = _next_of_pair("vprev1", -1)  # (a, b) -> a's last lane, then b's lanes but its last: b moved on by -1
vnext1 = _next_of_pair("vnext1", 1)
vnext2 = _next_of_pair("vnext2", 2)
vnext3 = _next_of_pair("vnext3", 3)
vnext4 = _next_of_pair("vnext4", 4)
vnext5 = _next_of_pair("vnext5", 5)   # 7-wide depthwise rows (ConvNeXt)
vnext6 = _next_of_pair("vnext6", 6)


def _halves_of_pair(name: str, high: bool):
    def typer(typingctx, a, b):
        if not (isinstance(a, Vec) and a == b):
            raise TypeError(f"{name}: expected two equal Vec types, got {a}, {b}")

        def codegen(context, builder, sig, args):
            h = a.lanes // 2
            first = h if high else 0
            picks = list(range(first, first + h)) + list(range(a.lanes + first, a.lanes + first + h))
            return builder.shuffle_vector(args[0], args[1], ir.Constant(ir.VectorType(_I32, a.lanes), picks))
        return a(a, b), codegen
    typer.__name__ = name
    return intrinsic(typer)


def _lanes_reduced(name: str, op: str, fastmath: tuple):
    def typer(typingctx, v):
        if not isinstance(v, Vec):
            raise TypeError(f"{name}: expected a Vec, got {v}")

        def codegen(context, builder, sig, args):
            vt = context.get_value_type(v)
            et = vt.element
            start = [ir.Constant(et, -0.0)] if op == "fadd" else []
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(et, [et] * len(start) + [vt]),
                                                f"llvm.vector.reduce.{op}.v{v.lanes}f{v.dtype.bitwidth}")
            return builder.call(fn, start + [args[0]], fastmath=fastmath)
        return v.dtype(v), codegen
    typer.__name__ = name
    return intrinsic(typer)


# A vector's lanes summed in lane order (vsum: a chain, the GEMM's order), or reduced as a tree of shuffles
# (log2(lanes) steps; the order is fixed by the lanes, not by the rows or blocks around them). The max
# ignores NaN lanes (maxnum).
vsum = _lanes_reduced("vsum", "fadd", ())
vsum_tree = _lanes_reduced("vsum_tree", "fadd", ("reassoc",))
vmax_tree = _lanes_reduced("vmax_tree", "fmax", ())

vlo = _halves_of_pair("vlo", False)
vhi = _halves_of_pair("vhi", True)


def _transpose_masks(lanes: int):
    """The 2-input shuffles of vtrans8: three stages, each swapping one bit of the vector index with
    one of the top lane-index bits between pairs of vectors; the last stage also puts each vector's
    lanes in the order vtrans8 promises. [(i, j, mask_i, mask_j)] per stage: new i, j from old i, j."""
    bits = lanes.bit_length() - 1
    vec = [[(r, m) for m in range(lanes)] for r in range(8)]  # (row, lane) held by each lane
    stages = []
    for s, lbit in enumerate(range(bits - 3, bits)):
        vb, lm = 1 << s, 1 << lbit
        stage, new = [], [None] * 8
        for i in (v for v in range(8) if not v & vb):
            j = i | vb
            mi = [lane if not lane & lm else lanes + (lane ^ lm) for lane in range(lanes)]
            mj = [lane | lm if not lane & lm else lanes + lane for lane in range(lanes)]
            both = vec[i] + vec[j]
            new[i], new[j] = [both[k] for k in mi], [both[k] for k in mj]
            stage.append([i, j, mi, mj])
        vec = new
        stages.append(stage)
    want = [(d % 8, d // 8) for d in range(lanes)]  # vector 0's lanes; the others follow by symmetry
    perm = [vec[0].index(w) for w in want]
    for entry in stages[-1]:
        entry[2], entry[3] = [entry[2][c] for c in perm], [entry[3][c] for c in perm]
    return stages


@intrinsic
def vtrans8(typingctx, r0, r1, r2, r3, r4, r5, r6, r7):
    rows = (r0, r1, r2, r3, r4, r5, r6, r7)
    if not (isinstance(r0, Vec) and all(r == r0 for r in rows)):
        raise TypeError(f"vtrans8: expected eight equal Vec types, got {rows}")
    out = types.UniTuple(r0, 8)

    def codegen(context, builder, sig, args):
        vec = list(args)
        for stage in _transpose_masks(r0.lanes):
            new = list(vec)
            for i, j, mi, mj in stage:
                new[i] = builder.shuffle_vector(vec[i], vec[j], ir.Constant(ir.VectorType(_I32, r0.lanes), mi))
                new[j] = builder.shuffle_vector(vec[i], vec[j], ir.Constant(ir.VectorType(_I32, r0.lanes), mj))
            vec = new
        return context.make_tuple(builder, out, vec)
    return out(*rows), codegen


@intrinsic
def vstore_hi(typingctx, arr, idx, v, n):
    _check_float_array(arr)

    def codegen(context, builder, sig, args):
        vt = context.get_value_type(v)
        half = v.lanes // 2
        fn = _masked(builder, "store", v, ir.VoidType(),
                     [vt, vt.as_pointer(), _I32, ir.VectorType(ir.IntType(1), v.lanes)])
        i = builder.sub(args[1], ir.Constant(args[1].type, half))
        nv = builder.add(args[3], ir.Constant(args[3].type, half))
        lo = builder.icmp_signed(">=", ir.Constant(ir.VectorType(_I64, v.lanes), list(range(v.lanes))),
                                 ir.Constant(ir.VectorType(_I64, v.lanes), [half] * v.lanes))
        mask = builder.and_(lo, _mask(builder, v.lanes, nv))
        builder.call(fn, [args[2], _vec_ptr(context, builder, arr, args[0], i, vt), ir.Constant(_I32, 4), mask])
        return context.get_dummy_value()
    return types.none(arr, idx, v, n), codegen


def _prefetch(name: str, write: int, locality: int):
    def typer(typingctx, arr, idx):
        _check_float_array(arr)

        def codegen(context, builder, sig, args):
            data = context.make_array(arr)(context, builder, args[0]).data
            ptr = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [
                ptr.type, _I32, _I32, _I32]), "llvm.prefetch.p0i8")
            builder.call(fn, [ptr, ir.Constant(_I32, write), ir.Constant(_I32, locality), ir.Constant(_I32, 1)])
            return context.get_dummy_value()
        return types.none(arr, idx), codegen
    typer.__name__ = name
    return intrinsic(typer)


# Hints that never fault: the cache line holding arr[idx] into L1 for writing (C tiles), or into L2 for
# reading (data a later loop reads: IMPLICIT's next panel of weights)
vprefetch = _prefetch("vprefetch", 1, 3)
vprefetch_l2 = _prefetch("vprefetch_l2", 0, 2)


@njit(nogil=True, cache=True, inline="always")
def vstore_until(arr, i, v, n, end):
    """arr[i:i+n] = v[:n], or the whole vector when it ends by `end` (its lanes past n land where a later
    store of the caller writes; end 0: never). AVX2's masked store is slow (AMD EPYC, one node, one thread:
    depthwise 3x3 on 272 x 14 x 14 0.163 -> 0.127 ms, on 544 x 7 x 7 0.141 -> 0.124, 5x5 on 240 x 28 x 28
    0.429 -> 0.351: bench/nodes_vs_ort.py's shapes)."""
    vstore_n(arr, i, v, vlanes(arr) if i + vlanes(arr) <= end else n)


@njit(nogil=True, cache=True, inline="always")
def vload_span(arr, o, s, size, fill):
    """Lanes i of arr[o + s + i] where 0 <= s + i < size, `fill` in the others (a run of `size` elements
    at o, e.g. a plane read flat): a plain load when the vector lies inside it."""
    L = vlanes(arr)
    lo, hi = max(0, -s), min(L, size - s)
    if lo == 0 and hi == L:
        return vload(arr, o + s)
    return vload_in(arr, o + s, lo, max(lo, hi), fill)

"""Gemm and MatMul, and their fused "ge" forms FusedGemm and FusedMatMul: gemm.py's GEMM plus one epilogue pass.

Gemm: y = act(alpha * A' @ B' + beta * C). transA reads A through strides; transB (or N == 1) takes the
dot-product form gemm_nt, and C is classified once in `prepare` by how it broadcasts to [M, N]:
a scalar or a column [M, 1] is a per-row scalar of the epilogue, a row [N] or a full [M, N] matrix its
vector operand (epilogue.py).

MatMul: numpy semantics (FusedMatMul may add a bias row, its third input). A 1-D operand is promoted to a matrix and its dim dropped afterwards; batch
dims broadcast. `prepare` lists the start offset of each batch's A and B matrices (broadcast batches
repeat an offset), so the kernel is a flat loop of GEMMs. When B is one shared matrix and A's batches
are contiguous, the batches fold into the rows of a single GEMM ([batch*M, K] @ [K, N]).

Tiling (AI-core blocks, tiling.py): a launch of at least 2 x gemm.MIN_BLOCK_MACS multiply-adds is cut into
up to `cores` blocks. MatMul with enough batches gives each block whole batches (BATCHES: at least two
per block, or a multiple of the block count, so the shares stay even); otherwise every GEMM is split
along gemm.split_axis: by panels of columns when N >= M (each block packs only its columns of B, and
reads all of A, the smaller), else by 8-row tiles; with too few of either, fewer blocks (or whole batches
when there are more of those). Gemm's dot-product form splits the same way. K is never split (every
element is one FMA chain, gemm.py), so the result is bitwise the same for any block count; the epilogue
runs on each block's own rows and columns. Each block has its own slice of the workspace (gemm.py's
packed blocks). BERT-base's FFN (128 x 768 @ 768 x 3072) on 2 cores: ~2.1x (bench/gemm_cores.py).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .epilogue import NONE, activation_args, epilogue
from .gemm import COLS, ROWS, gemm_block, gemm_blocks, gemm_nt_block, k_depth, share, split_axis, workspace
from .gemm_packed import gemm_packed_block, packed_size, packed_workspace
from .gemv import gemv, gemv_blocks, gemv_packed
from .registry import KernelContext, Launch, TensorSpec, broadcast_shapes, register
from .tiling import block_range, largest_share

C_NONE, C_SCALAR, C_COLUMN, C_ROW, C_FULL = range(5)
BATCHES = 2  # MatMul's third split: whole batches per block (ROWS, COLS: gemm.py's)
# A packed-weights MatMul with a bias or an activation runs its columns in slices of this many (whole panels
# of float32 and float64), each finished by the epilogue while it is still in L2 (the same FMA chains as one
# block: a block split by columns). BERT's FFN 128 x 768 @ 768 x 3072 with bias and GELU, one core, CPU time:
# 6.66 -> 6.54-6.58 ms (the 1.5 MB output had left L2 before the epilogue read it again).
EPILOGUE_COLS = 384
_FLOATS = (np.float32, np.float64)


def _lanes(dtype) -> int:
    return 64 // np.dtype(dtype).itemsize


def _gemm_tiling(ctx: KernelContext, M: int, N: int, K: int, batches: int = 1, nt: bool = False):
    """(block_dim, axis, workspace elements per block) for `batches` GEMMs [M, K] @ [K, N]."""
    dtype = ctx.inputs[0].dtype
    bd = gemm_blocks(batches * M * N * K, ctx.cores)
    if bd > 1 and batches > 1 and (batches % bd == 0 or batches >= 2 * bd):
        axis = BATCHES
    else:
        axis, inner = split_axis(M, N, bd, _lanes(dtype))
        axis, bd = (BATCHES, min(bd, batches)) if inner < bd and batches > inner else (axis, inner)
    if nt:
        return bd, axis, 1
    m, n, P = M, N, 2 * _lanes(dtype)
    if axis == ROWS:
        m = largest_share(M, 8, bd)
    elif axis == COLS:
        n = largest_share(N, P, bd)
    return bd, axis, max(1, workspace(m, n, K, dtype, True, N))


@njit(nogil=True, cache=True, inline="always")
def _block_ws(ws, block_idx, block_dim):
    per = ws.size // block_dim
    return ws[block_idx * per:(block_idx + 1) * per]


@njit(nogil=True, cache=True)
def gemm(a, b, c, y, ws, M, N, K, trans_a, trans_b, alpha, beta, c_mode, act, p0, p1, axis, block_idx,
         block_dim):
    """y[M,N] = act(alpha * op(a) @ op(b) + beta * c), c broadcast as c_mode says: block block_idx's share."""
    sam, sak = (1, M) if trans_a else (K, 1)
    m0, m1, n0, n1 = share(M, N, axis, 64 // y.itemsize, block_idx, block_dim)
    if trans_b or N == 1:  # b is [N, K] (a [K, 1] column is the same memory)
        gemm_nt_block(a, b, y, N, K, sam, sak, False, m0, m1, n0, n1)
    elif trans_a:
        gemm_block(a, b, np.empty(0, np.int64), N, y, N, K, 1, M, False, m0, m1, n0, n1,
                   _block_ws(ws, block_idx, block_dim), True)
    else:   # the literal unit stride: the register tiles compiled for it (microkernel.py)
        gemm_block(a, b, np.empty(0, np.int64), N, y, N, K, K, 1, False, m0, m1, n0, n1,
                   _block_ws(ws, block_idx, block_dim), True)
    has_v = 1 if c_mode == C_ROW or c_mode == C_FULL else 0
    for i in range(m0, m1):
        s = 0.0
        if c_mode == C_SCALAR:
            s = beta * c[0]
        elif c_mode == C_COLUMN:
            s = beta * c[i]
        voff = (i * N if c_mode == C_FULL else 0) + n0
        epilogue(y, i * N + n0, n1 - n0, alpha, s, c, voff, beta, has_v, act, p0, p1)


def _gemm_dims(ctx: KernelContext):
    a, b = ctx.inputs[0], ctx.inputs[1]
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ctx.error(f"A and B must be matrices, got shapes {a.shape} and {b.shape}")
    if a.dtype not in _FLOATS or b.dtype != a.dtype:
        raise ctx.error(f"A and B must both be float32 or float64, got {a.dtype} and {b.dtype}")
    M, K = a.shape[::-1] if ctx.attr("transA", 0) else a.shape
    K2, N = b.shape[::-1] if ctx.attr("transB", 0) else b.shape
    if K != K2:
        raise ctx.error(f"inner dimensions differ: A {a.shape}, B {b.shape}, "
                        f"transA={ctx.attr('transA', 0)}, transB={ctx.attr('transB', 0)}")
    return M, N, K


def _c_mode(ctx: KernelContext, M: int, N: int) -> int:
    """How input C broadcasts to [M, N] (unidirectionally, as ONNX allows)."""
    if not ctx.has(2):
        return C_NONE
    shape = tuple(ctx.inputs[2].shape)
    if ctx.inputs[2].dtype != ctx.inputs[0].dtype:
        raise ctx.error(f"C has dtype {ctx.inputs[2].dtype}, A has {ctx.inputs[0].dtype}")
    if int(np.prod(shape)) == 1 and len(shape) <= 2:
        return C_SCALAR
    if shape == (M, N):
        return C_FULL
    if shape in ((N,), (1, N)):
        return C_ROW
    if shape == (M, 1):
        return C_COLUMN
    raise ctx.error(f"C of shape {shape} does not broadcast to ({M}, {N})")


def _infer_gemm(ctx: KernelContext) -> list[TensorSpec]:
    M, N, _ = _gemm_dims(ctx)
    return [TensorSpec((M, N), ctx.inputs[0].dtype)]


def _prepare_gemm(ctx: KernelContext) -> Launch:
    M, N, K = _gemm_dims(ctx)
    mode = _c_mode(ctx, M, N)
    act, p0, p1 = activation_args(ctx)
    if M == 1:   # a decode step's row: B streamed once (gemv.py)
        sam, sak = (1, M) if ctx.attr("transA", 0) else (K, 1)
        return Launch(gemv, (M, N, K, sam, sak, int(ctx.attr("transB", 0)), float(ctx.attr("alpha", 1.0)),
                             float(ctx.attr("beta", 1.0)), mode, act, p0, p1), (),
                      inputs=(0, 1, 2 if mode != C_NONE else 0), tiled=True, block_dim=gemv_blocks(N, K, ctx.cores))
    nt = bool(ctx.attr("transB", 0)) or N == 1
    bd, axis, per = _gemm_tiling(ctx, M, N, K, nt=nt)
    args = (M, N, K, int(ctx.attr("transA", 0)), int(ctx.attr("transB", 0)), float(ctx.attr("alpha", 1.0)),
            float(ctx.attr("beta", 1.0)), mode, act, p0, p1, axis)
    # an absent C is stood in for by A (never read), so one specialization serves both
    return Launch(gemm, args, (TensorSpec((bd * per,), ctx.inputs[0].dtype),),
                  inputs=(0, 1, 2 if mode != C_NONE else 0), tiled=True, block_dim=bd)


register("Gemm", infer=_infer_gemm)(_prepare_gemm)
register("FusedGemm", domain="ge", infer=_infer_gemm)(_prepare_gemm)


@njit(nogil=True, cache=True)
def matmul(a, b, c, y, ws, M, N, K, a_off, b_off, has_c, act, p0, p1, axis, block_idx, block_dim):
    """y[i] = act(a[a_off[i]:] @ b[b_off[i]:] + c) for each batch i, all matrices [M,K] @ [K,N], c a bias
    row [N] when has_c (FusedMatMul's third input): block block_idx's batches (axis BATCHES) or its
    share of every batch."""
    i0, i1 = 0, a_off.size
    m0, m1, n0, n1 = 0, M, 0, N
    if axis == BATCHES:
        i0, i1 = block_range(a_off.size, 1, block_idx, block_dim)
    else:
        m0, m1, n0, n1 = share(M, N, axis, 64 // y.itemsize, block_idx, block_dim)
    w = _block_ws(ws, block_idx, block_dim)
    for i in range(i0, i1):
        yo = i * M * N
        ai, bi, yi = a[a_off[i]:a_off[i] + M * K], b[b_off[i]:b_off[i] + K * N], y[yo:yo + M * N]
        if N == 1:
            gemm_nt_block(ai, bi, yi, N, K, K, 1, False, m0, m1, n0, n1)
        else:
            gemm_block(ai, bi, np.empty(0, np.int64), N, yi, N, K, K, 1, False, m0, m1, n0, n1, w, True)
        if act != NONE or has_c:
            for m in range(m0, m1):
                epilogue(y, yo + m * N + n0, n1 - n0, 1.0, 0.0, c, n0, 1.0, has_c, act, p0, p1)


def _weight_shape(ctx: KernelContext) -> tuple:
    """B's shape: its own, or a packed B's (pack_matmul_weights: gemm_packed.pack_b of a [K, N] matrix)."""
    b, shape = ctx.inputs[1], ctx.attr("weight_shape")
    if shape is None:
        return tuple(b.shape)
    shape = tuple(int(d) for d in shape)
    if len(shape) != 2 or tuple(b.shape) != (packed_size(*shape, b.dtype),):
        raise ctx.error(f"packed weights of shape {list(b.shape)} do not hold a matrix of weight_shape "
                        f"{list(shape)}")
    return shape


@njit(nogil=True, cache=True)
def matmul_packed(a, bp, c, y, ws, M, N, K, has_c, act, p0, p1, axis, block_idx, block_dim):
    """y = act(a[M, K] @ B + c), B [K, N] packed (gemm_packed.pack_b): block block_idx's share."""
    m0, m1, n0, n1 = share(M, N, axis, 64 // y.itemsize, block_idx, block_dim)
    w = _block_ws(ws, block_idx, block_dim)
    if act == NONE and not has_c:
        gemm_packed_block(a, bp, N, y, N, K, K, m0, m1, n0, n1, w)
        return
    for j0 in range(n0, n1, EPILOGUE_COLS):   # the epilogue on each slice while it is in L2
        j1 = min(j0 + EPILOGUE_COLS, n1)
        gemm_packed_block(a, bp, N, y, N, K, K, m0, m1, j0, j1, w)
        for m in range(m0, m1):
            epilogue(y, m * N + j0, j1 - j0, 1.0, 0.0, c, j0, 1.0, has_c, act, p0, p1)


def _matmul_dims(ctx: KernelContext):
    """(batch shape, M, N, K, output shape, A batch shape, B batch shape) with 1-D operands promoted."""
    a, b, bshape = ctx.inputs[0], ctx.inputs[1], _weight_shape(ctx)
    if a.dtype not in _FLOATS or b.dtype != a.dtype:
        raise ctx.error(f"A and B must both be float32 or float64, got {a.dtype} and {b.dtype}")
    if not a.shape or not bshape:
        raise ctx.error(f"MatMul operands must have rank >= 1, got {a.shape} and {bshape}")
    sa = (1,) + a.shape if len(a.shape) == 1 else a.shape
    sb = bshape + (1,) if len(bshape) == 1 else bshape
    (M, K), (K2, N) = sa[-2:], sb[-2:]
    if K != K2:
        raise ctx.error(f"inner dimensions differ: {a.shape} @ {b.shape}")
    batch = broadcast_shapes(ctx, sa[:-2], sb[:-2])
    out = batch + ((M,) if len(a.shape) > 1 else ()) + ((N,) if len(bshape) > 1 else ())
    return batch, M, N, K, out, sa[:-2], sb[:-2]


def _infer_matmul(ctx: KernelContext) -> list[TensorSpec]:
    _, _, N, _, out, _, _ = _matmul_dims(ctx)
    if ctx.has(2):  # FusedMatMul's bias: one value per output column
        c = ctx.inputs[2]
        if c.dtype != ctx.inputs[0].dtype or int(np.prod(c.shape)) != N or any(d != 1 for d in c.shape[:-1]):
            raise ctx.error(f"bias of shape {list(c.shape)} and dtype {c.dtype} is not a row of {N} "
                            f"{ctx.inputs[0].dtype} values")
    return [TensorSpec(out, ctx.inputs[0].dtype)]


def _batch_offsets(batch, own, matrix_size):
    """Start offset of this operand's matrix for each output batch, in row-major batch order."""
    idx = np.arange(int(np.prod(own, dtype=np.int64)), dtype=np.int64).reshape(own)
    return np.ascontiguousarray(np.broadcast_to(idx, batch)).reshape(-1) * matrix_size


def _prepare_matmul(ctx: KernelContext) -> Launch:
    batch, M, N, K, _, ba, bb = _matmul_dims(ctx)
    a_off, b_off = _batch_offsets(batch, ba, M * K), _batch_offsets(batch, bb, K * N)
    if a_off.size > 1 and not b_off.any() and (a_off == np.arange(a_off.size) * M * K).all():
        M, a_off, b_off = M * a_off.size, a_off[:1], b_off[:1]  # one shared B: fold batches into rows
    act, p0, p1 = activation_args(ctx)
    has_c = ctx.has(2)
    if ctx.attr("weight_shape") is not None:  # B packed at compile time: the batches are A's rows
        M, dtype = M * a_off.size, ctx.inputs[0].dtype
        if M == 1:   # a decode step's row (gemv.py: the same bits as the unpacked row below)
            return Launch(gemv_packed, (M, N, K, int(k_depth(K)), int(has_c), act, p0, p1), (),
                          inputs=(0, 1, 2 if has_c else 0), tiled=True, block_dim=gemv_blocks(N, K, ctx.cores))
        bd, axis, _ = _gemm_tiling(ctx, M, N, K)
        per = packed_workspace(largest_share(M, 8, bd) if axis == ROWS else M, K, dtype)
        return Launch(matmul_packed, (M, N, K, int(has_c), act, p0, p1, axis), (TensorSpec((bd * per,), dtype),),
                      inputs=(0, 1, 2 if has_c else 0), tiled=True, block_dim=bd)
    if M == 1 and a_off.size == 1 and N > 1:   # one row, one B: streamed (gemv.py)
        return Launch(gemv, (M, N, K, K, 1, 0, 1.0, 1.0, C_ROW if has_c else C_NONE, act, p0, p1), (),
                      inputs=(0, 1, 2 if has_c else 0), tiled=True, block_dim=gemv_blocks(N, K, ctx.cores))
    bd, axis, per = _gemm_tiling(ctx, M, N, K, batches=a_off.size, nt=N == 1)
    # an absent bias is stood in for by A (never read), so one specialization serves both
    return Launch(matmul, (M, N, K, a_off, b_off, int(has_c), act, p0, p1, axis),
                  (TensorSpec((bd * per,), ctx.inputs[0].dtype),), inputs=(0, 1, 2 if has_c else 0), tiled=True,
                  block_dim=bd)


register("MatMul", infer=_infer_matmul)(_prepare_matmul)
register("FusedMatMul", domain="ge", infer=_infer_matmul)(_prepare_matmul)

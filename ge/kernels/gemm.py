"""The GEMM core under Conv, ConvTranspose, Gemm and MatMul: Numba micro-kernels, no BLAS.

Why not BLAS: (1) every output element here is computed by the same sequence of operations, whatever its
row or column, so channels with equal weights give bitwise-equal results (the ONNX light models fill all
weights with one constant, and SqueezeNet's reference output is uniform only under that property; the
OpenBLAS kernel this machine runs breaks it by ~1 ulp per layer, which its logits of ~1e10 amplify);
(2) the kernels run as blocks on AI cores (a tiled launch, tiling.py), not on BLAS threads.
Measured by bench/gemm_one_core.py --rounds 9 (2026-12-07 01:39, one core of an AMD EPYC Zen 5 with AVX-512),
float32, gemm_nn_ld against numpy's OpenBLAS on one thread, alternating: 1024^3 217.7 vs 125.0 GF/s (1.74x); the
conv shape 256x3136x576 223.1 vs 120.9; ViT-B's MatMuls 206.5-227.4 vs 117.4-117.6 (onnxruntime's MLAS, the
stronger reference here, is level with it on those: bench/nodes_vs_ort.py --only matmul, 1.00-1.04x).
On the same VMs with only AVX2 exposed (2026-12-06 07:50; the register tiles then run as microkernel.py's NARROW
sub-tiles): 1024^3 75 vs 84 GF/s (0.89x), the conv shape 72-74 vs 82-83, ViT-B's MatMuls 71-72 vs 79-80.

A is read through strides (element (m, k) at a[m*sam + k*sak]), so a transposed A costs nothing (a caller
passing the literal sak 1 links register tiles compiled for a unit stride alone, microkernel.py); C has a row
stride, and B a row stride or any row offsets (`brow`: a conv reads its shifted, zero-padded input as B
without unfolding it, see conv.py's SHIFTED).

Every C element, wherever it sits in a tile, a block or a split, is one chain c = fma(a[m,k], b[k,j], c)
over k in increasing order from 0 (or from C when accumulating), with C stored in its own dtype between k
blocks, and the k blocks depend on K only: results are bitwise equal for any tiling, split or core count.

`gemm_block` computes a block's share [m0, m1) x [n0, n1) of C, blocked for the caches (tuned on a Xeon's 48 KiB L1,
2 MiB L2 per core; the L2 blocks follow the core's L2 size):
- k blocks: K cut into equal blocks of at most KC_MAX = 256, so a panel of B (KC x 2 vectors, <= 32 KiB)
  stays in L1 while the 8-row tiles of A sweep it;
- A blocks: a sweep covers MC rows (A_BLOCK_BYTES = a quarter of L2), which stay in L2 from one panel to the
  next (ResNet-50's 512x7x7 -> 2048 conv: 75 -> 87 GF/s; its 2 MiB of A per k block used to stream from L3
  for every panel);
- packed B (`pack`, for callers whose B is a strided input: MatMul, Gemm, POINTWISE convs, ConvTranspose;
  when _packs): B[k block, NC columns] copied into contiguous zero-padded panels, row by row (B is read
  sequentially instead of panel rows 12.5 KB apart: every row a TLB miss, none prefetched); NC such that
  the packed block and the C block it updates fill L2_BLOCK_BYTES, so C stays in L2 between k blocks
  (+5-10%), and column blocks are evened out. The conv-shaped GEMM 256x3136x576: 90 -> 110 GF/s, and its
  split by columns over two cores went from ~1.4x to ~2x. With the packed B, tiles of A are packed too
  when a B block has PACK_A_MIN_COLS columns to amortize it (+16% at K = 64, neutral elsewhere).
- B read in place otherwise (SHIFTED's and IM2COL's B is already a compact copy in L2: packing it again
  cost 10-20%; fewer than PACK_MIN_ROWS rows of C: too little reuse; a small B with aligned rows: -10%),
  a panel copied (aligned, contiguous) only when B's rows are a multiple of 2 KiB apart (they then share a
  few L1 sets: BERT's FFN 1.37x), or when they come through row offsets, at any alignment, and at least
  COPY_MIN_ROWS rows of C reuse the copy (ResNet-50's 512-channel 3x3 convs +8-20%).

Tiling (host side, for the callers' `prepare`): a launch gets blocks of at least MIN_BLOCK_MACS
multiply-adds. Measured on one core (float32, warm, from Python): convs and MatMuls of 0.45-4 million
multiply-adds run at 32-67 GMAC/s, ~45 at one million, so a block of 2^20 does ~23 us of work, the least
that pays for handing it to another core (a few us plus the wake-up: 15-60 us for the benchmark's Python
threads, bench/gemm_cores.py). `split_axis` cuts a GEMM by 8-row tiles (ROWS) or by panels of columns
(COLS), preferring the cut whose every block re-reads the smaller operand.
gemm_nt: C[M,N] (+)= A[M,K] @ B[N,K]^T as row-by-row dot products, for N == 1 and transposed B (explicit
vectors, four rows of B at a time).
"""
from __future__ import annotations

import numpy as np
from numba import njit, uint64

from .microkernel import _panel, _panel_a
from .simd import vfma, vlanes, vload, vload_n, vstore, vsum, vzero
from .specialize import by_type
from .tiling import block_dim_for, block_range

KC_MAX = 256  # the deepest k block: K cut into equal blocks of at most this; a panel (KC x 2 vectors) fits L1


def _l2_bytes(default: int = 1 << 21) -> int:
    """This core's L2 from sysfs ("1024K"; the Xeon this was first tuned on, 2 MiB, when unknown)."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as f:
            size = f.read().strip()
        return int(size[:-1]) << {"K": 10, "M": 20}[size[-1]]
    except (OSError, ValueError, KeyError, IndexError):
        return default


# Blocks sized by the core's L2: a quarter for A's rows, half for a packed B block with its C block. Tuned at
# 512 KiB / 1 MiB on the Xeon's 2 MiB; on the EPYC's 1 MiB those overflowed it (AVX2, one core, best of 7 side
# by side, 2026-12-06: ViT-B's 197x3072x768 66.9 -> 72.8 GF/s, 256x3136x576 72.7 -> 76.3, 1024^3 73.7 -> 75.2)
L2_BYTES = _l2_bytes()
A_BLOCK_BYTES = L2_BYTES // 4  # the rows of A one sweep of a panel reads (MC x KC) stay in L2
L2_BLOCK_BYTES = L2_BYTES // 2  # a packed B block (KC x NC), with the C block it updates, fills half of L2
PACK_MIN_ROWS = 128  # fewer rows of C: B read in place (packing it costs more than reusing it saves)
PACK_MIN_B_BYTES = 1 << 19  # a smaller B with aligned rows stays in L2 as it is (packing it: -10%)
PACK_A = True  # with a packed B block, pack A's tiles too ...
PACK_A_MIN_COLS = 512  # ... when the block has this many columns to amortize the copy
# When B's row stride is a multiple of 2 KiB, a panel's rows fall into a few L1 sets and evict each other:
# then B read in place has each panel copied first.
PACK_STRIDE_BYTES = 2048
# B read through row offsets (SHIFTED's taps) has rows at any alignment: with this many rows of C to reuse
# it, each panel is first copied aligned (ResNet-50's 512-channel 3x3 convs +8-20%; -3-8% with fewer rows)
COPY_MIN_ROWS = 512
MIN_BLOCK_MACS = 1 << 20  # a block's least work: ~23 us at small shapes' ~45 GMAC/s (see the module doc)


# -- sizes (host and kernel side) -------------------------------------------------------------------

@njit(nogil=True, cache=True)
def k_depth(K):
    """The depth of every k block: K cut into equal blocks of at most KC_MAX (a multiple of 8)."""
    nb = max(1, (K + KC_MAX - 1) // KC_MAX)
    return max(8, ((K + nb - 1) // nb + 7) // 8 * 8)


@njit(nogil=True, cache=True)
def _mc(kc, itemsize):
    """Rows of an A block: A_BLOCK_BYTES of kc columns, whole tiles."""
    return max(8, A_BLOCK_BYTES // (kc * itemsize) // 8 * 8)


@njit(nogil=True, cache=True)
def _nc_max(M, K, lanes):
    """Columns of a packed B block: it fills L2_BLOCK_BYTES with the C block it updates when K has several
    k blocks (so C stays in L2 from one k block to the next), whole panels (at least one)."""
    P, kc = 2 * lanes, k_depth(K)
    per_column = kc + (min(M, _mc(kc, 64 // lanes)) if K > kc else 0)
    return max(P, L2_BLOCK_BYTES * lanes // 64 // per_column // P * P)


@njit(nogil=True, cache=True)
def _packs(M, N, K, ldb, itemsize):
    """Whether packing B pays for a block of C of M rows, N columns: enough rows reuse the packed block,
    and this block's part of B (K x N) is too big to stay in L2 between panel sweeps anyway, or its rows
    are not 64-byte aligned (then every vector load of B in place spans two cache lines: 7x7 planes'
    49-float rows, +15%)."""
    return M >= PACK_MIN_ROWS and (K * N * itemsize >= PACK_MIN_B_BYTES or ldb * itemsize % 64 != 0)


@njit(nogil=True, cache=True)
def _a_elems(M, kc, itemsize):
    """The packed A block's elements (after the packed B block)."""
    return min(M, _mc(kc, itemsize)) * kc if PACK_A else 0


@njit(nogil=True, cache=True)
def pack_elems(M, N, K, ldb, itemsize, packed):
    """Workspace elements gemm_block needs for a block of M rows and N columns of C, B's rows ldb apart:
    packed A and B blocks when `packed` (B is a large strided matrix: an input) and _packs, else room for
    one panel (copied when B's rows conflict in L1)."""
    lanes = 64 // itemsize
    P, kc = 2 * lanes, k_depth(K)
    if not packed or not _packs(M, N, K, ldb, itemsize):
        return kc * P
    return kc * min(_nc_max(M, K, lanes), (N + P - 1) // P * P) + _a_elems(M, kc, itemsize)


def workspace(M: int, N: int, K: int, dtype, packed: bool = True, ldb: int | None = None) -> int:
    """pack_elems for a dtype (host side); ldb defaults to N."""
    return int(pack_elems(M, N, K, N if ldb is None else ldb, np.dtype(dtype).itemsize, packed))


# -- tiling (host side): how a launch of GEMMs is cut into blocks ------------------------------------

ROWS, COLS = 0, 1  # a GEMM split by rows of C (A's rows: each block reads all of B) or by columns


def gemm_blocks(macs: int, cores: int) -> int:
    """block_dim for GEMM work of `macs` multiply-adds: each block gets at least MIN_BLOCK_MACS."""
    return block_dim_for(int(macs), cores, MIN_BLOCK_MACS)


def split_axis(M: int, N: int, block_dim: int, lanes: int) -> tuple[int, int]:
    """(ROWS or COLS, block_dim) for a GEMM shared by up to block_dim blocks: preferably the axis whose
    other operand is the smaller (split by columns, every block reads all of A, [M, K]; by rows, all of
    B, [K, N]), if it has a tile (8 rows) or a panel (2 vectors of columns) per block; else the other;
    else fewer blocks, as many as the larger axis has units."""
    units = {ROWS: -(-M // 8), COLS: -(-N // (2 * lanes))}
    for axis in ((COLS, ROWS) if N >= M else (ROWS, COLS)):
        if units[axis] >= block_dim:
            return axis, block_dim
    axis = COLS if units[COLS] >= units[ROWS] else ROWS
    return axis, max(1, min(block_dim, units[axis]))


@njit(nogil=True, cache=True)
def share(M, N, axis, lanes, block_idx, block_dim):
    """(m0, m1, n0, n1): block block_idx's part of C[M, N] split along `axis`, on tile (8 rows) or panel
    (2 vectors of columns) boundaries."""
    if axis == ROWS:
        m0, m1 = block_range(M, 8, block_idx, block_dim)
        return m0, m1, 0, N
    n0, n1 = block_range(N, 2 * lanes, block_idx, block_dim)
    return 0, M, n0, n1


# -- entry points -----------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def gemm_nn(a, b, c, M, N, K, sam, sak, accumulate):
    """c[:M*N] (+)= A @ b[:K*N], row-major flat arrays, A[m, k] = a[m*sam + k*sak]."""
    gemm_nn_ld(a, b, c, M, N, K, sam, sak, N, N, accumulate)


@njit(nogil=True, cache=True)
def gemm_nn_ld(a, b, c, M, N, K, sam, sak, ldb, ldc, accumulate):
    """C (+)= A @ B with row strides: B[k, j] = b[k*ldb + j], C[m, j] = c[m*ldc + j], j < N."""
    ws = np.empty(pack_elems(M, N, K, ldb, c.itemsize, True), c.dtype)
    if sak == 1:   # the unit stride's own register tiles (microkernel.py)
        gemm_block(a, b, np.empty(0, np.int64), ldb, c, ldc, K, sam, 1, accumulate, 0, M, 0, N, ws, True)
    else:
        gemm_block(a, b, np.empty(0, np.int64), ldb, c, ldc, K, sam, sak, accumulate, 0, M, 0, N, ws, True)


@njit(nogil=True, cache=True)
def gemm_nn_rows(a, b, brow, c, M, N, K, sam, sak, ldc, accumulate):
    """C (+)= A @ B, B's row k starting at b[brow[k]] (any offsets: a conv's shifted taps, with no im2col),
    C[m, j] at c[m*ldc + j], j < N."""
    ws = np.empty(pack_elems(M, N, K, 0, c.itemsize, False), c.dtype)
    if sak == 1:
        gemm_block(a, b, brow, 0, c, ldc, K, sam, 1, accumulate, 0, M, 0, N, ws, False)
    else:
        gemm_block(a, b, brow, 0, c, ldc, K, sam, sak, accumulate, 0, M, 0, N, ws, False)


@by_type(keep=("sak",))
@njit(nogil=True, cache=True)
def gemm_block(a, b, brow, ldb, c, ldc, K, sam, sak, accumulate, m0, m1, n0, n1, ws, pack):
    """C[m0:m1, n0:n1] (+)= A[m0:m1, :] @ B[:, n0:n1]: B's row k at b[brow[k]] (brow non-empty) or at
    b[k*ldb]; C[m, j] at c[m*ldc + j]; ws: this block's workspace, pack_elems(m1 - m0, n1 - n0, K, ldb,
    itemsize, pack) elements or more (`pack`: B may be packed, in blocks as wide as ws holds). A caller
    passing the literal sak 1 links the unit stride's copy (microkernel.py), any other the strided one."""
    if m1 <= m0 or n1 <= n0:
        return
    if K == 0:
        if not accumulate:
            for m in range(m0, m1):
                c[m * ldc + n0:m * ldc + n1] = 0
        return
    kc = k_depth(K)
    if pack and _packs(m1 - m0, n1 - n0, K, ldb, c.itemsize) and \
            ws.size >= kc * 2 * vlanes(c) + _a_elems(m1 - m0, kc, c.itemsize):
        _blocked(a, b, brow, ldb, c, ldc, K, sam, sak, accumulate, m0, m1, n0, n1, ws)
    else:
        _streamed(a, b, brow, ldb, c, ldc, K, sam, sak, accumulate, m0, m1, n0, n1, ws)


# -- the two loop nests -----------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def _blocked(a, b, brow, ldb, c, ldc, K, sam, sak, accumulate, m0, m1, n0, n1, ws):
    """Packed B blocks in L2, each panel (in L1) swept by the 8-row tiles of an MC-row A block (in L2)."""
    L = vlanes(c)
    P = 2 * L
    kc = k_depth(K)
    mc = _mc(kc, c.itemsize)
    na = _a_elems(m1 - m0, kc, c.itemsize)  # the packed A block, after the B block
    ncm = min(_nc_max(m1 - m0, K, L), (n1 - n0 + P - 1) // P * P, max(P, (ws.size - na) // kc // P * P))
    ncm = _even_columns(ncm, n0, n1, P)
    flat = brow[:0]
    ap = ws[ws.size - na:]
    for j0 in range(n0, n1, ncm):
        nc = min(ncm, n1 - j0)
        for k0 in range(0, K, kc):
            kn = min(kc, K - k0)
            _pack_block(b, brow, ldb, k0, kn, j0, nc, ws)
            _sweep(a, ws, flat, c, ldc, sam, sak, m0, m1, mc, j0, nc, k0, kn, ap, accumulate or k0 > 0)


@njit(nogil=True, cache=True, inline="always")
def _even_columns(ncm, n0, n1, P):
    """Column blocks of at most ncm made even, whole panels: 784 -> 416 + 368, not 672 + 112."""
    nb = (n1 - n0 + ncm - 1) // ncm
    return ((n1 - n0 + nb - 1) // nb + P - 1) // P * P


@njit(nogil=True, cache=True, inline="always")
def _sweep(a, bp, flat, c, ldc, sam, sak, m0, m1, mc, j0, nc, k0, kn, ap, load):
    """One packed B block (k0.., kn rows x nc columns from j0, at bp) swept by the MC-row A blocks of [m0, m1):
    their whole tiles through a packed A (ap) when the block has PACK_A_MIN_COLS columns, else A in place."""
    P = 2 * vlanes(c)
    mr = m1 - (m1 - m0) % 8  # rows in whole tiles end here
    for i0 in range(m0, m1, mc):
        i1 = min(i0 + mc, m1)
        if PACK_A and nc >= PACK_A_MIN_COLS:
            _pack_a(a, sam, sak, i0, min(i1, mr), k0, kn, ap)
            _panel_a(ap, a, bp, c, i0, min(i1, mr), i1, j0, nc, k0, kn, sam, sak, ldc, load)
        else:
            _panel(a, bp, flat, P, c, i0, min(i1, mr), i1, j0, 0, nc, k0, kn, sam, sak, ldc, load)


@by_type
@njit(nogil=True, cache=True)
def _pack_a(a, sam, sak, i0, i1, k0, kn, ap):
    """The whole tiles of A[i0:i1, k0:k0+kn] into ap, tile by tile: row r of the tile at row i, column k,
    at ap[(i - i0)*kn + k*8 + r] (the micro-kernel's broadcasts then walk one contiguous run)."""
    for i in range(i0, i1, 8):
        t = (i - i0) * kn
        for k in range(kn):
            q = i * sam + (k0 + k) * sak
            for r in range(8):
                ap[t + k * 8 + r] = a[q + r * sam]


@njit(nogil=True, cache=True)
def _streamed(a, b, brow, ldb, c, ldc, K, sam, sak, accumulate, m0, m1, n0, n1, ws):
    """B read in place, panel by panel (copied first when its rows conflict in L1, or sit at any alignment
    and many rows reuse them), each panel swept by the row tiles of an MC-row A block. A panel in place that
    ends inside its second vector runs as two panels of one vector (a whole second vector read past N)."""
    L = vlanes(c)
    P = 2 * L
    kc = k_depth(K)
    mc = _mc(kc, c.itemsize)
    mr = m1 - (m1 - m0) % 8
    packed = n1 - n0 > L and ws.size >= kc * P and (
        m1 - m0 >= 16 and _conflicting(brow, ldb, K, c.itemsize) or brow.size > 0 and m1 - m0 >= COPY_MIN_ROWS)
    flat = brow[:0]
    for k0 in range(0, K, kc):
        kn = min(kc, K - k0)
        load = accumulate or k0 > 0
        rows = brow[k0:k0 + kn] if brow.size else brow
        for i0 in range(m0, m1, mc):
            i1 = min(i0 + mc, m1)
            for j in range(n0, n1, P):
                w = min(P, n1 - j)
                if packed:  # the panel B[k0:k0+kn, j:j+P] copied contiguous (zero-padded) first
                    _pack_block(b, brow, ldb, k0, kn, j, w, ws)
                    _panel(a, ws, flat, P, c, i0, min(i1, mr), i1, j, 0, w, k0, kn, sam, sak, ldc, load)
                else:
                    step = P if w == P else L
                    for v in range(0, w, step):
                        _panel(a, b, rows, ldb, c, i0, min(i1, mr), i1, j + v, j + v + k0 * ldb, min(step, w - v),
                               k0, kn, sam, sak, ldc, load)


@njit(nogil=True, cache=True)
def _conflicting(brow, ldb, K, itemsize):
    """Whether B's rows are a multiple of PACK_STRIDE_BYTES apart."""
    if not brow.size:
        return (ldb * itemsize) % PACK_STRIDE_BYTES == 0
    for k in range(1, K):
        if ((brow[k] - brow[k - 1]) * itemsize) % PACK_STRIDE_BYTES:
            return False
    return K > 1


@by_type
@njit(nogil=True, cache=True)
def _pack_block(b, brow, ldb, k0, kn, j0, nc, bp):
    """B[k0:k0+kn, j0:j0+nc] into bp as panels of 2 vectors: panel p (columns j0 + p*P...) at bp[p*kn*P:],
    its row k at + k*P, zero-padded past nc. B is read row by row (sequential: prefetched)."""
    L = vlanes(bp)
    P = 2 * L
    full = nc - nc % P
    for k in range(kn):
        s, d = (brow[k0 + k] if brow.size else (k0 + k) * ldb) + j0, k * P
        for j in range(0, full, P):
            vstore(bp, d + j * kn, vload(b, s + j))
            vstore(bp, d + j * kn + L, vload(b, s + j + L))
        if full < nc:
            w = nc - full
            vstore(bp, d + full * kn, vload_n(b, s + full, min(L, w)))
            vstore(bp, d + full * kn + L, vload_n(b, s + full + L, max(w - L, 0)))


# -- micro-kernels ----------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def gemm_nt(a, b, c, M, N, K, sam, sak, accumulate):
    """c[:M*N] (+)= A @ b[:N*K]^T, A[m, k] = a[m*sam + k*sak]: each element one dot product."""
    gemm_nt_block(a, b, c, N, K, sam, sak, accumulate, 0, M, 0, N)


@njit(nogil=True, cache=True, inline="always")
def _dots4(a, q, b, p, K, L):
    """The dot products of A's row at a[q:] with B's rows p, p+K, p+2K, p+3K: four vector chains, the
    last k masked, each summed in lane order (vsum), so a dot's bits depend on K only."""
    a0, a1, a2, a3 = vzero(b), vzero(b), vzero(b), vzero(b)
    kf = K - K % L
    for k in range(0, kf, L):
        x = vload(a, q + k)
        a0 = vfma(x, vload(b, p + k), a0)
        a1 = vfma(x, vload(b, p + K + k), a1)
        a2 = vfma(x, vload(b, p + 2 * K + k), a2)
        a3 = vfma(x, vload(b, p + 3 * K + k), a3)
    if kf < K:
        x = vload_n(a, q + kf, K - kf)
        a0 = vfma(x, vload_n(b, p + kf, K - kf), a0)
        a1 = vfma(x, vload_n(b, p + K + kf, K - kf), a1)
        a2 = vfma(x, vload_n(b, p + 2 * K + kf, K - kf), a2)
        a3 = vfma(x, vload_n(b, p + 3 * K + kf, K - kf), a3)
    return vsum(a0), vsum(a1), vsum(a2), vsum(a3)


@njit(nogil=True, cache=True, inline="always")
def _dot(a, q, b, p, K, L):
    a0 = vzero(b)
    kf = K - K % L
    for k in range(0, kf, L):
        a0 = vfma(vload(a, q + k), vload(b, p + k), a0)
    if kf < K:
        a0 = vfma(vload_n(a, q + kf, K - kf), vload_n(b, p + kf, K - kf), a0)
    return vsum(a0)


@by_type
@njit(nogil=True, cache=True, fastmath={"contract", "reassoc"})
def _nt_strided(a, b, c, N, K, sam, sak, accumulate, m0, m1, n0, n1):
    """gemm_nt_block for an A read through a k stride (transA)."""
    N, K, sam, sak = uint64(N), uint64(K), uint64(sam), uint64(sak)
    for m in range(uint64(m0), uint64(m1)):
        q = m * sam
        for n in range(uint64(n0), uint64(n1)):
            p = n * K
            s = a[0] * 0
            for k in range(uint64(0), K):
                s += a[q + k * sak] * b[p + k]
            if accumulate:
                c[m * N + n] += s
            else:
                c[m * N + n] = s


@by_type
@njit(nogil=True, cache=True)
def gemm_nt_block(a, b, c, N, K, sam, sak, accumulate, m0, m1, n0, n1):
    """C[m0:m1, n0:n1] of gemm_nt (C[m, n] at c[m*N + n]): each element the same dot product whatever
    the block. A matrix-vector product (a fully connected layer at batch 1) streams B once: four of its
    rows at a time keep four memory streams and four FMA chains going (VGG-19's fully connected layers, one
    core: 1.31x onnxruntime's time before, as one scalar chain per element; 25088 -> 4096 now 13.4 ms,
    31 GB/s, onnxruntime 17.2 ms)."""
    if sak != 1:
        _nt_strided(a, b, c, N, K, sam, sak, accumulate, m0, m1, n0, n1)
        return
    L = vlanes(b)
    for m in range(m0, m1):
        q = m * sam
        n = n0
        while n + 4 <= n1:
            d0, d1, d2, d3 = _dots4(a, q, b, n * K, K, L)
            o = m * N + n
            if accumulate:
                c[o] += d0
                c[o + 1] += d1
                c[o + 2] += d2
                c[o + 3] += d3
            else:
                c[o], c[o + 1], c[o + 2], c[o + 3] = d0, d1, d2, d3
            n += 4
        for n in range(n, n1):
            d = _dot(a, q, b, n * K, K, L)
            if accumulate:
                c[m * N + n] += d
            else:
                c[m * N + n] = d

"""The GEMM's register tiles (gemm.py drives them): sweeps of one panel of B by the row tiles of A.

A tile is 8 rows x 2 vectors of C (16 zmm registers, simd.py's explicit vectors) kept in registers over a
k block: per k, 2 vector loads of B, 8 broadcasts of A and 16 FMAs. Float32 on one core with everything in
L1/L2: 86-95 GF/s on the AMD EPYC Zen 4 (one 512-bit FMA per cycle; the FMA loop alone 99 GF/s), ~130 on the
Xeon this was first tuned on (FMA loop ~170), 230-260 on the Zen 5 EPYC (two 512-bit FMAs per cycle; gemm.py's
doc has the whole GEMMs). Without AVX-512 (the EPYC's VM since 2026-12-06: AVX2, 16 ymm registers) a tile runs as `_narrow`'s
sub-tiles (NARROW): ViT-B's block 80.1 -> 43.4 ms on one core (its MatMuls ~36 -> 65-70 GF/s); and a panel's
whole tiles as 6-row sub-tiles straight across them (`_hexes`): 1024^3 79 -> 86 GF/s, OpenBLAS 92
(bench/gemm_one_core.py: 0.87 -> 0.93x; ResNet's 256x3136x576 0.86 -> 0.94, ViT's 0.85-0.88 -> 0.93-0.96).
A panel's second vector is masked when N ends inside it (or the panel is one masked vector);
the rows left over from the tiles of 8 run as a tile of 4 (8 FMA chains, full speed) and then one at a time
(2 chains: latency-bound, a quarter of a tile's speed; M = 197, ViT's tokens, lost 5% to 5 such rows).

- With A's k stride a literal 1 (every caller but a transposed A's: Gemm's transA, ConvTranspose's weights),
  LLVM addresses the tile's 8 rows off one index; with a run-time stride it chained the 8 row addresses
  through one register, one add after another, every k. The literal is kept down to the tiles (by_type's
  `keep`), so a model whose GEMMs all have a unit stride compiles only that copy.
- FULL_PANELS: a panel's second vector of B is a plain load, not a masked one: a packed panel is
  zero-padded, and B read in place comes in whole panels or panels of one vector (gemm._streamed); the
  lanes past N are never stored. Against a masked load with every lane on, on the Zen 5 EPYC (2026-12-07,
  one core, B packed once, streamed from memory, 64-byte aligned as device memory puts it), it saved
  6-10%: ViT-B's 197x3072x768 210-219 -> 234-235 GF/s, 197x768x3072 219-228 -> 241-243 (onnxruntime's
  MLAS: 226-235), 1024^3 216-231 -> 227-252. With B 16 bytes off a cache line the masked load ran at the
  plain one's speed; prefetching the next panel into L2 on top cost 3-8%.
- PREFETCH_C: while a tile runs, the next tile's 8 rows of C are prefetched (they are far apart: an L2 or
  TLB miss each would stall the tile's start): +8% on the conv-shaped GEMM 256x3136x576, neutral elsewhere.
- Compiled units: `_panel`, `_tiles` and `_panel_a` are functions of their own, not inlined (the tiles are
  inlined into them), compiled once per argument types and k stride kind (by_type, keeping sak), and
  `_streamed`, `_blocked` and gemm_packed link the same copies instead of each inlining its own. Until
  2026-12-08 a literal unit k stride and `padded` made 4 copies of `_tiles`, 3 of `_panel`, 2 of `_panel_a`
  per dtype: a BERT 4x256's first run from a cold cache spent 75.7 CPU s, now 49.9 (bench/cold_start.py's
  recorder, loaded machine); one core, alternating, the GEMM shapes of bench/gemm_one_core.py and
  ResNet/BERT's within -3..+2%. Earlier, gemm_nn's float32 compile, CPU seconds on the AMD EPYC
  (2026-12-07, loaded): 78.0 with every level inlined, 24.7 with these three units; one core, best of
  alternating runs: 64x3136x64 and 8x256x1024 -2 to -3% (a call per panel), 128x256x256,
  100^3, 256x784x128, 32x196x1152 level (the large shapes not measurable under that load). With `_tile2`
  not inlined either (a call per tile): 35.8 s, but -8% at K = 64; with only `_panel`/`_panel_a`: 33.7 s.
Every C element is one FMA chain over k in increasing order whatever tile, row or mask it falls in
(gemm.py's bitwise property).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .simd import host_has, vbcast, vfma, vlanes, vload, vload_n, vprefetch, vstore, vstore_n, vzero
from .specialize import by_type

PREFETCH_C = True
# Without AVX-512 (16 ymm registers) a tile's 16 vectors of C are 32 ymm accumulators, spilled every k:
# there each tile runs as sub-tiles that fit (`_tile2`).
NARROW = not host_has("avx512f")


@by_type(keep=("sak",))
@njit(nogil=True, cache=True)
def _panel(a, b, brow, ldb, c, m0, mr, m1, j0, bo, nc, k0, kn, sam, sak, ldc, load):
    """C[m0:m1, j0:j0+nc] (+)= A[m0:m1, k0:k0+kn] @ B, panel by panel (2 vectors of columns), each swept
    by the row tiles: panel p's row k at b[brow[k] + bo + p*P] (brow non-empty: B in place) or at
    b[bo + p*P*kn + k*ldb] (a packed block: ldb = P; or one panel in place: nc <= P); A[m, k] at
    a[m*sam + k*sak], sak the literal 1 where the caller passes it (by_type keeps it). Every panel's second
    vector of B is read whole (FULL_PANELS): packed panels are zero-padded, and B in place comes in whole
    panels or panels of one vector (gemm._streamed)."""
    L = vlanes(c)
    P = 2 * L
    for j in range(0, nc, P):
        w = min(P, nc - j)
        _tiles(a, b, brow, ldb, c, m0, mr, m1, j0 + j, bo + (j if brow.size else j * kn), w, k0, kn, sam, sak, ldc,
               load)


@by_type(keep=("sak",))
@njit(nogil=True, cache=True)
def _tiles(a, b, brow, ldb, c, m0, mr, m1, j, o, w, k0, kn, sam, sak, ldc, load):
    """C[m0:m1, j:j+w] (+)= A[m0:m1, k0:k0+kn] @ one panel (B's row k at b[brow[k] + o] or b[k*ldb + o])."""
    L = vlanes(c)
    if NARROW and w == 2 * L:
        _hexes(a, m0 * sam + k0 * sak, 8 * sam, sam, sak, b, brow, ldb, o, c, m0 * ldc + j, ldc, kn, load, mr - m0)
    elif w > L:
        for m in range(m0, mr, 8):
            if PREFETCH_C and m + 8 < mr:
                _prefetch_tile(c, (m + 8) * ldc + j, ldc, L)
            _tile2(a, m * sam + k0 * sak, sam, sak, b, brow, ldb, o, c, m * ldc + j, ldc, kn, load, w - L, 8)
    else:
        for m in range(m0, mr, 8):
            if PREFETCH_C and m + 8 < mr:
                _prefetch_tile(c, (m + 8) * ldc + j, ldc, 0)
            _tile2_n(a, m * sam + k0 * sak, sam, sak, b, brow, ldb, o, c, m * ldc + j, ldc, kn, load, w)
    m = mr
    if m1 - m >= 4 and w > L:
        _tile2(a, m * sam + k0 * sak, sam, sak, b, brow, ldb, o, c, m * ldc + j, ldc, kn, load, w - L, 4)
        m += 4
    for m in range(m, m1):
        ao, co = m * sam + k0 * sak, m * ldc + j
        _row(a, ao, sak, b, brow, ldb, o, c, co, kn, load, min(L, w))
        if w > L:
            _row(a, ao, sak, b, brow, ldb, o + L, c, co + L, kn, load, w - L)


@by_type(keep=("sak",))
@njit(nogil=True, cache=True)
def _panel_a(ap, a, bp, c, m0, mr, m1, j0, nc, k0, kn, sam, sak, ldc, load):
    """_panel for a packed B block and a packed A block (the leftover rows read A in place)."""
    L = vlanes(c)
    P = 2 * L
    flat = np.empty(0, np.int64)
    for j in range(0, nc, P):
        w = min(P, nc - j)
        o, co = j * kn, j0 + j
        if NARROW and w == P:  # the tile's row r at ap[(r // 8) * 8 * kn + r % 8], k by k 8 apart
            _hexes(ap, 0, 8 * kn, 1, 8, bp, flat, P, o, c, m0 * ldc + co, ldc, kn, load, mr - m0)
        elif w > L:
            for m in range(m0, mr, 8):
                if PREFETCH_C and m + 8 < mr:
                    _prefetch_tile(c, (m + 8) * ldc + co, ldc, L)
                _tile2(ap, (m - m0) * kn, 1, 8, bp, flat, P, o, c, m * ldc + co, ldc, kn, load, w - L, 8)
        else:
            for m in range(m0, mr, 8):
                if PREFETCH_C and m + 8 < mr:
                    _prefetch_tile(c, (m + 8) * ldc + co, ldc, 0)
                _tile2_n(ap, (m - m0) * kn, 1, 8, bp, flat, P, o, c, m * ldc + co, ldc, kn, load, w)
        m = mr
        if m1 - m >= 4 and w > L:  # A's leftover rows in place
            _tile2(a, m * sam + k0 * sak, sam, sak, bp, flat, P, o, c, m * ldc + co, ldc, kn, load, w - L, 4)
            m += 4
        for m in range(m, m1):
            ao = m * sam + k0 * sak
            _row(a, ao, sak, bp, flat, P, o, c, m * ldc + co, kn, load, min(L, w))
            if w > L:
                _row(a, ao, sak, bp, flat, P, o + L, c, m * ldc + co + L, kn, load, w - L)


@njit(nogil=True, cache=True, inline="always")
def _prefetch_tile(c, co, ldc, second):
    """Prefetch the 8 rows of the next C tile (its second vector too when `second`), while this one runs:
    its loads would otherwise stall the tile's start (C rows are far apart: an L2 or TLB miss each)."""
    for r in range(8):
        vprefetch(c, co + r * ldc)
        if second:
            vprefetch(c, co + r * ldc + second)


@njit(nogil=True, cache=True, inline="always")
def _tile(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n2, R):
    """C[R rows, 2 vectors] at c[co:] (+)= A[R rows, kn] at a[ao:] @ B[kn, 2 vectors] at b[bo:], with n2 <= L
    columns in the second vector (C's masked; B's read whole: FULL_PANELS): the C vectors stay in registers over
    the kn steps. R is a literal, 8 or 4 (the rows left over from the tiles of 8: 8 FMA chains still hide the
    FMA latency)."""
    L = vlanes(c)
    r0, r1, r2, r3 = co, co + ldc, co + 2 * ldc, co + 3 * ldc
    r4, r5, r6, r7 = co + 4 * ldc, co + 5 * ldc, co + 6 * ldc, co + 7 * ldc
    q0, q1, q2, q3 = ao, ao + sam, ao + 2 * sam, ao + 3 * sam
    q4, q5, q6, q7 = ao + 4 * sam, ao + 5 * sam, ao + 6 * sam, ao + 7 * sam
    z = vzero(c)
    c00, c01, c10, c11, c20, c21, c30, c31 = z, z, z, z, z, z, z, z
    c40, c41, c50, c51, c60, c61, c70, c71 = z, z, z, z, z, z, z, z
    if load:
        c00, c01 = vload(c, r0), vload_n(c, r0 + L, n2)
        c10, c11 = vload(c, r1), vload_n(c, r1 + L, n2)
        c20, c21 = vload(c, r2), vload_n(c, r2 + L, n2)
        c30, c31 = vload(c, r3), vload_n(c, r3 + L, n2)
        if R > 4:
            c40, c41 = vload(c, r4), vload_n(c, r4 + L, n2)
            c50, c51 = vload(c, r5), vload_n(c, r5 + L, n2)
            c60, c61 = vload(c, r6), vload_n(c, r6 + L, n2)
            c70, c71 = vload(c, r7), vload_n(c, r7 + L, n2)
    for k in range(kn):
        p, t = (brow[k] if brow.size else k * ldb) + bo, k * sak
        b0, b1 = vload(b, p), vload(b, p + L)
        x = vbcast(a, q0 + t)
        c00, c01 = vfma(x, b0, c00), vfma(x, b1, c01)
        x = vbcast(a, q1 + t)
        c10, c11 = vfma(x, b0, c10), vfma(x, b1, c11)
        x = vbcast(a, q2 + t)
        c20, c21 = vfma(x, b0, c20), vfma(x, b1, c21)
        x = vbcast(a, q3 + t)
        c30, c31 = vfma(x, b0, c30), vfma(x, b1, c31)
        if R <= 4:
            continue
        x = vbcast(a, q4 + t)
        c40, c41 = vfma(x, b0, c40), vfma(x, b1, c41)
        x = vbcast(a, q5 + t)
        c50, c51 = vfma(x, b0, c50), vfma(x, b1, c51)
        x = vbcast(a, q6 + t)
        c60, c61 = vfma(x, b0, c60), vfma(x, b1, c61)
        x = vbcast(a, q7 + t)
        c70, c71 = vfma(x, b0, c70), vfma(x, b1, c71)
    vstore(c, r0, c00)
    vstore_n(c, r0 + L, c01, n2)
    vstore(c, r1, c10)
    vstore_n(c, r1 + L, c11, n2)
    vstore(c, r2, c20)
    vstore_n(c, r2 + L, c21, n2)
    vstore(c, r3, c30)
    vstore_n(c, r3 + L, c31, n2)
    if R <= 4:
        return
    vstore(c, r4, c40)
    vstore_n(c, r4 + L, c41, n2)
    vstore(c, r5, c50)
    vstore_n(c, r5 + L, c51, n2)
    vstore(c, r6, c60)
    vstore_n(c, r6 + L, c61, n2)
    vstore(c, r7, c70)
    vstore_n(c, r7 + L, c71, n2)


@njit(nogil=True, cache=True, inline="always")
def _tile_n(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n):
    """The same for 8 rows and one vector of n <= L columns (masked)."""
    r0, r1, r2, r3 = co, co + ldc, co + 2 * ldc, co + 3 * ldc
    r4, r5, r6, r7 = co + 4 * ldc, co + 5 * ldc, co + 6 * ldc, co + 7 * ldc
    q0, q1, q2, q3 = ao, ao + sam, ao + 2 * sam, ao + 3 * sam
    q4, q5, q6, q7 = ao + 4 * sam, ao + 5 * sam, ao + 6 * sam, ao + 7 * sam
    if load:
        c0, c1, c2, c3 = vload_n(c, r0, n), vload_n(c, r1, n), vload_n(c, r2, n), vload_n(c, r3, n)
        c4, c5, c6, c7 = vload_n(c, r4, n), vload_n(c, r5, n), vload_n(c, r6, n), vload_n(c, r7, n)
    else:
        z = vzero(c)
        c0, c1, c2, c3, c4, c5, c6, c7 = z, z, z, z, z, z, z, z
    for k in range(kn):
        b0, t = vload_n(b, (brow[k] if brow.size else k * ldb) + bo, n), k * sak
        c0 = vfma(vbcast(a, q0 + t), b0, c0)
        c1 = vfma(vbcast(a, q1 + t), b0, c1)
        c2 = vfma(vbcast(a, q2 + t), b0, c2)
        c3 = vfma(vbcast(a, q3 + t), b0, c3)
        c4 = vfma(vbcast(a, q4 + t), b0, c4)
        c5 = vfma(vbcast(a, q5 + t), b0, c5)
        c6 = vfma(vbcast(a, q6 + t), b0, c6)
        c7 = vfma(vbcast(a, q7 + t), b0, c7)
    vstore_n(c, r0, c0, n)
    vstore_n(c, r1, c1, n)
    vstore_n(c, r2, c2, n)
    vstore_n(c, r3, c3, n)
    vstore_n(c, r4, c4, n)
    vstore_n(c, r5, c5, n)
    vstore_n(c, r6, c6, n)
    vstore_n(c, r7, c7, n)


@njit(nogil=True, cache=True, inline="always")
def _tile2(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n2, R):
    """_tile, or without AVX-512 `_narrow`'s sub-tiles."""
    if NARROW:
        _narrow(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, vlanes(c), n2, R)
    else:
        _tile(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n2, R)


@njit(nogil=True, cache=True, inline="always")
def _tile2_n(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n):
    """_tile_n, or without AVX-512 `_narrow`'s sub-tiles."""
    if NARROW:
        _narrow(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n, 0, 8)
    else:
        _tile_n(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n)


@njit(nogil=True, cache=True)
def _narrow(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n1, n2, R):
    """A tile of R rows x 2 vectors (n1, n2 columns; n2 = 0: one vector) without AVX-512 (16 ymm
    registers). A whole tile of 8 rows runs as two 6 rows x 1 vector (`_hex`, 12 ymm chains) and one
    2 x 2 vectors (`_duo`, 8); edges as 4 x 1 vector (`_quad`, masked). In L1 on this AMD EPYC (AVX2, the
    VM hides AVX-512), 2026-12-06: the 8 x 2-vector tile (32 ymm chains, spilled) 36 GF/s; 4 x 1 vector
    sub-tiles (8 chains: the FMA latency barely hidden) 50; hex + hex + duo 82 (numpy's sgemm 85).
    Not inlined: one copy, not one per call site (compile time), for ~1% a tile (a call per 8 x 32 x kn)."""
    if sak == 1:  # a literal 1: the rows addressed off one index (see the module doc)
        _narrow_body(a, ao, sam, 1, b, brow, ldb, bo, c, co, ldc, kn, load, n1, n2, R)
    else:
        _narrow_body(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n1, n2, R)


@njit(nogil=True, cache=True, inline="always")
def _narrow_body(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n1, n2, R):
    L = vlanes(c)
    if R == 8 and n1 == L and n2 == L:
        for v in range(2):
            _hex(a, ao, ao + sam, ao + 2 * sam, ao + 3 * sam, ao + 4 * sam, ao + 5 * sam, sak, b, brow, ldb,
                 bo + v * L, c, co + v * L, ldc, kn, load)
        _duo(a, ao + 6 * sam, sam, sak, b, brow, ldb, bo, c, co + 6 * ldc, ldc, kn, load)
        return
    for h in range(0, R, 4):
        for v in range(2 if n2 > 0 else 1):
            _quad(a, ao + h * sam, sam, sak, b, brow, ldb, bo + v * L, c, co + h * ldc + v * L, ldc, kn, load,
                  n2 if v else n1)


@njit(nogil=True, cache=True)
def _hexes(a, ao, blk, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, rows):
    """Without AVX-512: C[rows, 2 whole vectors] (+)= A[rows, kn] @ B[kn, 2 vectors], rows a multiple of 8,
    row r's A at ao + (r // 8) * blk + (r % 8) * sam (A in place: blk = 8 * sam; packed: blk = 8 * kn, sam 1):
    6-row sub-tiles (_hex, 12 ymm chains) straight across the 8-row tiles, the 2 or 4 rows left as _duo.
    _narrow's hex + hex + duo per tile ran a quarter of the multiply-adds in _duo's 8 latency-bound chains.
    Not inlined, as _narrow."""
    if sak == 1:
        _hexes_body(a, ao, blk, sam, 1, b, brow, ldb, bo, c, co, ldc, kn, load, rows)
    else:
        _hexes_body(a, ao, blk, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, rows)


@njit(nogil=True, cache=True, inline="always")
def _hexes_body(a, ao, blk, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, rows):
    L = vlanes(c)
    r = 0
    while r + 6 <= rows:
        if PREFETCH_C:
            for i in range(r + 6, min(r + 12, rows)):
                vprefetch(c, co + i * ldc)
                vprefetch(c, co + i * ldc + L)
        q0, q1, q2 = _row_at(ao, blk, sam, r), _row_at(ao, blk, sam, r + 1), _row_at(ao, blk, sam, r + 2)
        q3, q4, q5 = _row_at(ao, blk, sam, r + 3), _row_at(ao, blk, sam, r + 4), _row_at(ao, blk, sam, r + 5)
        for v in range(2):
            _hex(a, q0, q1, q2, q3, q4, q5, sak, b, brow, ldb, bo + v * L, c, co + r * ldc + v * L, ldc, kn, load)
        r += 6
    while r < rows:  # rows left: 2 or 4, inside one 8-row tile
        _duo(a, _row_at(ao, blk, sam, r), sam, sak, b, brow, ldb, bo, c, co + r * ldc, ldc, kn, load)
        r += 2


@njit(nogil=True, cache=True, inline="always")
def _row_at(ao, blk, sam, r):
    return ao + (r // 8) * blk + (r % 8) * sam


@njit(nogil=True, cache=True, inline="always")
def _hex(a, q0, q1, q2, q3, q4, q5, sak, b, brow, ldb, bo, c, co, ldc, kn, load):
    """C[6 rows, 1 vector] (+)= A[6 rows (at q0..q5), kn] @ B[kn, 1 vector]."""
    r0, r1, r2, r3, r4, r5 = co, co + ldc, co + 2 * ldc, co + 3 * ldc, co + 4 * ldc, co + 5 * ldc
    if load:
        c0, c1, c2, c3, c4, c5 = vload(c, r0), vload(c, r1), vload(c, r2), vload(c, r3), vload(c, r4), vload(c, r5)
    else:
        z = vzero(c)
        c0, c1, c2, c3, c4, c5 = z, z, z, z, z, z
    for k in range(kn):
        p, t = (brow[k] if brow.size else k * ldb) + bo, k * sak
        b0 = vload(b, p)
        c0 = vfma(vbcast(a, q0 + t), b0, c0)
        c1 = vfma(vbcast(a, q1 + t), b0, c1)
        c2 = vfma(vbcast(a, q2 + t), b0, c2)
        c3 = vfma(vbcast(a, q3 + t), b0, c3)
        c4 = vfma(vbcast(a, q4 + t), b0, c4)
        c5 = vfma(vbcast(a, q5 + t), b0, c5)
    vstore(c, r0, c0)
    vstore(c, r1, c1)
    vstore(c, r2, c2)
    vstore(c, r3, c3)
    vstore(c, r4, c4)
    vstore(c, r5, c5)


@njit(nogil=True, cache=True, inline="always")
def _duo(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load):
    """C[2 rows, 2 vectors] (+)= A[2 rows, kn] @ B[kn, 2 vectors]."""
    L = vlanes(c)
    r0, r1 = co, co + ldc
    if load:
        c00, c01, c10, c11 = vload(c, r0), vload(c, r0 + L), vload(c, r1), vload(c, r1 + L)
    else:
        z = vzero(c)
        c00, c01, c10, c11 = z, z, z, z
    for k in range(kn):
        p, t = (brow[k] if brow.size else k * ldb) + bo, k * sak
        b0, b1 = vload(b, p), vload(b, p + L)
        x = vbcast(a, ao + t)
        c00, c01 = vfma(x, b0, c00), vfma(x, b1, c01)
        x = vbcast(a, ao + sam + t)
        c10, c11 = vfma(x, b0, c10), vfma(x, b1, c11)
    vstore(c, r0, c00)
    vstore(c, r0 + L, c01)
    vstore(c, r1, c10)
    vstore(c, r1 + L, c11)


@njit(nogil=True, cache=True, inline="always")
def _quad(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n):
    """C[4 rows, 1 vector of n columns] (+)= A[4 rows, kn] @ B[kn, 1 vector] (masked)."""
    r0, r1, r2, r3 = co, co + ldc, co + 2 * ldc, co + 3 * ldc
    q0, q1, q2, q3 = ao, ao + sam, ao + 2 * sam, ao + 3 * sam
    if load:
        c0, c1, c2, c3 = vload_n(c, r0, n), vload_n(c, r1, n), vload_n(c, r2, n), vload_n(c, r3, n)
    else:
        z = vzero(c)
        c0, c1, c2, c3 = z, z, z, z
    for k in range(kn):
        p, t = (brow[k] if brow.size else k * ldb) + bo, k * sak
        b0 = vload_n(b, p, n)
        c0 = vfma(vbcast(a, q0 + t), b0, c0)
        c1 = vfma(vbcast(a, q1 + t), b0, c1)
        c2 = vfma(vbcast(a, q2 + t), b0, c2)
        c3 = vfma(vbcast(a, q3 + t), b0, c3)
    vstore_n(c, r0, c0, n)
    vstore_n(c, r1, c1, n)
    vstore_n(c, r2, c2, n)
    vstore_n(c, r3, c3, n)


@njit(nogil=True, cache=True, inline="always")
def _row(a, ao, sak, b, brow, ldb, bo, c, co, kn, load, n):
    """One row, one (masked) vector of n <= L columns: the rows left over from the tiles of 8."""
    c0 = vload_n(c, co, n) if load else vzero(c)
    for k in range(kn):
        c0 = vfma(vbcast(a, ao + k * sak), vload_n(b, (brow[k] if brow.size else k * ldb) + bo, n), c0)
    vstore_n(c, co, c0, n)

"""GEMM on a B packed once at compile time (passes/pack_matmul_weights.py): MatMul's constant weights.

gemm.py packs a large B into panels on every run, block by block (`_pack_block`); for a constant B that
copy is the same every time. `pack_b` stores all of B [K, N] once in that layout:

    k block kb (rows k0 .. k0+kn, gemm.k_depth's equal blocks) at bp[k0 * Np:], Np = N rounded up to a
    panel (P = 2 vectors); in it panel p (columns p*P ..) at + p*P*kn, its row k at + k*P, zero-padded.

so any run of whole panels of one k block is one contiguous packed block, exactly what `_pack_block` makes,
and `gemm_packed_block` runs gemm.py's `_blocked` loops (its `_sweep`) on it without the copy. Every C element is the
same FMA chain as in gemm.py (same k blocks, same order): packed or not, the bits are equal.
ViT-B's four weight MatMuls (197 tokens; AMD EPYC, AVX2, one core): see the pass's header.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .gemm import _a_elems, _even_columns, _mc, _nc_max, _sweep, k_depth


def panel_width(dtype) -> int:
    """P: the columns of a panel (2 vectors of 64 bytes)."""
    return 2 * 64 // np.dtype(dtype).itemsize


def pack_b(b: np.ndarray) -> np.ndarray:
    """B [K, N] in the packed layout (the module doc), flat: K * Np elements."""
    K, N = b.shape
    P = panel_width(b.dtype)
    Np, kc = -(-N // P) * P, int(k_depth(K))
    pad = np.zeros((K, Np), b.dtype)
    pad[:, :N] = b
    out = np.empty(K * Np, b.dtype)
    for k0 in range(0, K, kc):
        kn = min(kc, K - k0)
        # [kn, Np] -> [panels, kn, P]
        out[k0 * Np:(k0 + kn) * Np] = pad[k0:k0 + kn].reshape(kn, Np // P, P).transpose(1, 0, 2).reshape(-1)
    return out


def packed_size(K: int, N: int, dtype) -> int:
    P = panel_width(dtype)
    return K * (-(-N // P) * P)


def packed_workspace(M: int, K: int, dtype) -> int:
    """Workspace elements of gemm_packed_block for a block of M rows: the packed A block only."""
    return max(1, int(_a_elems(M, k_depth(K), np.dtype(dtype).itemsize)))


@njit(nogil=True, cache=True)
def gemm_packed_block(a, bp, N, c, ldc, K, sam, m0, m1, n0, n1, ws):
    """C[m0:m1, n0:n1] = A[m0:m1, :] @ B[:, n0:n1], B packed by pack_b (N: its columns), n0 a multiple of
    a panel (P); A[m, k] at a[m*sam + k], C[m, j] at c[m*ldc + j]; ws: packed_workspace elements."""
    if m1 <= m0 or n1 <= n0:
        return
    if K == 0:
        for m in range(m0, m1):
            c[m * ldc + n0:m * ldc + n1] = 0
        return
    P = 128 // c.itemsize
    Np = (N + P - 1) // P * P
    kc = k_depth(K)
    mc = _mc(kc, c.itemsize)
    # column blocks as gemm._blocked cuts them (the C block stays in L2 between k blocks)
    ncm = _even_columns(min(_nc_max(m1 - m0, K, P // 2), (n1 - n0 + P - 1) // P * P), n0, n1, P)
    flat = np.empty(0, np.int64)
    ap = ws[:_a_elems(m1 - m0, kc, c.itemsize)]
    for j0 in range(n0, n1, ncm):
        nc = min(ncm, n1 - j0)
        for k0 in range(0, K, kc):
            kn = min(kc, K - k0)
            _sweep(a, bp[k0 * Np + j0 * kn:], flat, c, ldc, sam, 1, m0, m1, mc, j0, nc, k0, kn, ap, k0 > 0)

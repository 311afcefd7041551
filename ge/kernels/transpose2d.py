"""A batched 2-D transpose, y[b, c, r] = x[b, r, c], in register blocks: the Transposes that leave no
contiguous run to copy (NCHW <-> NHWC, a matrix's transpose), float32 and float64. movement.py's
Transpose sends a permutation here when, its axes collapsed, it swaps the last two.

A block is L x L (L lanes: 16 float32, 8 float64): L rows loaded as vectors, transposed in registers
(simd.vtrans8, float32 twice and the halves merged) and stored as L columns. The element-by-element
strided walk before it cost ~1 ns an element: ConvNeXt's 96 x 56 x 56 to NHWC 0.28 ms, onnxruntime 0.06;
in blocks 0.05 ms. Rows and columns past the last whole block are copied one by one.

Blocks (AI cores): ranges of the (batch, row block) units; copies are exact, any split gives the same bits.
"""
from __future__ import annotations

from numba import njit

from .simd import vhi, vlanes, vlo, vload, vstore, vtrans8
from .tiling import block_range

NS_PER_ELEMENT = 0.15  # one thread, float32, in L2 (blocks.MIN_BLOCK_NS)


@njit(nogil=True, cache=True, inline="always")
def _rows8(x, b, C):
    return vtrans8(vload(x, b), vload(x, b + C), vload(x, b + 2 * C), vload(x, b + 3 * C),
                   vload(x, b + 4 * C), vload(x, b + 5 * C), vload(x, b + 6 * C), vload(x, b + 7 * C))


@njit(nogil=True, cache=True)
def transpose2d(x, y, batch, R, C, block_idx, block_dim):
    """y[b*R*C + c*R + r] = x[b*R*C + r*C + c] for b < batch, r < R, c < C: this block's row blocks."""
    L = vlanes(x)
    nrb = (R + L - 1) // L
    u0, u1 = block_range(batch * nrb, 1, block_idx, block_dim)
    for u in range(u0, u1):
        o, r0 = (u // nrb) * R * C, (u % nrb) * L
        if r0 + L > R:  # the rows past the last whole block
            for r in range(r0, R):
                for c in range(C):
                    y[o + c * R + r] = x[o + r * C + c]
            continue
        for c0 in range(0, C - L + 1, L):
            b, d = o + r0 * C + c0, o + c0 * R + r0
            t = _rows8(x, b, C)
            if L == 8:  # float64: one transpose of 8 x 8
                for j in range(8):
                    vstore(y, d + j * R, t[j])
            else:  # float32: rows 0-7 and 8-15 give each column's halves
                t2 = _rows8(x, b + 8 * C, C)
                for j in range(8):
                    vstore(y, d + 2 * j * R, vlo(t[j], t2[j]))
                    vstore(y, d + (2 * j + 1) * R, vhi(t[j], t2[j]))
        for c in range(C - C % L, C):
            for r in range(r0, r0 + L):
                y[o + c * R + r] = x[o + r * C + c]

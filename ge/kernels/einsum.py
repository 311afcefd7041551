"""Einsum of one or two operands, as one loop nest over the equation's labels.

prepare parses the equation (spaces, '...' broadcast dims, implicit output: the ellipsis dims, then the
labels seen once, alphabetically) into a label table: each label's extent and, per operand, its stride
(the sum of the strides of the axes it names, which walks a diagonal for a repeated label; 0 where the
operand lacks it or broadcasts a 1). Output labels come first. The kernel then computes each output
element as the sum over the contracted labels (an odometer) of a[oa] * b[ob] (one operand: a[oa]), so
one compiled loop per dtype serves every equation: transposes, diagonals, reductions, inner and batched
matrix products. It is the general path, not the fast one: a product of large matrices runs ~1 ns per
multiply-add, where the GEMM kernels run 20-50x faster.

Blocks (AI cores): the output elements split across blocks; a block sums each of its elements whole
(rule 2: the same additions in the same order for any block count).
"""
from __future__ import annotations

import math
import string

import numpy as np
from numba import njit

from .blocks import blocks, tiled
from .registry import KernelContext, Launch, TensorSpec, register
from .tiling import block_range

NUM = tuple(np.dtype(t) for t in ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                   "uint32", "uint64"))
_NS = 1.0  # per multiply-add, one thread


@njit(nogil=True, cache=True)
def einsum(a, b, out, dims, sa, sb, n_out, two, block_idx, block_dim):
    """out[e] = sum over the contracted labels of a * b (or a alone when two == 0); labels [0, n_out)
    index the output in C order."""
    r = dims.size
    idx = np.zeros(max(r - n_out, 1), np.int64)
    terms = 1
    for d in range(n_out, r):
        terms *= dims[d]
    lo, hi = block_range(out.size, 1, block_idx, block_dim)
    for e in range(lo, hi):
        rem, oa, ob = e, 0, 0
        for d in range(n_out - 1, -1, -1):
            i = rem % dims[d]
            rem //= dims[d]
            oa += i * sa[d]
            ob += i * sb[d]
        acc = out.dtype.type(0)
        idx[:] = 0
        for _ in range(terms):
            acc += a[oa] * b[ob] if two else a[oa]
            d = r - 1
            while d >= n_out:  # odometer over the contracted labels
                idx[d - n_out] += 1
                oa += sa[d]
                ob += sb[d]
                if idx[d - n_out] < dims[d]:
                    break
                oa -= sa[d] * dims[d]
                ob -= sb[d] * dims[d]
                idx[d - n_out] = 0
                d -= 1
        out[e] = acc


def _terms(ctx: KernelContext):
    """(input terms, output term) as lists of labels, with '...' expanded to right-aligned dim labels."""
    eq = str(ctx.attr("equation", "")).replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ctx.inputs):
        raise ctx.error(f"equation {eq!r} names {len(terms)} operands, the node has {len(ctx.inputs)}")
    parsed, n_ell = [], 0
    for t, spec in zip(terms, ctx.inputs):
        if t.count("...") > 1 or any(c not in string.ascii_letters for c in t.replace("...", "")):
            raise ctx.error(f"bad term {t!r} in equation {eq!r}")
        k = len(spec.shape) - len(t.replace("...", ""))
        if k < 0 or (k and "..." not in t):
            raise ctx.error(f"term {t!r} does not fit an operand of rank {len(spec.shape)}")
        n_ell = max(n_ell, k)
        parsed.append((t, k))
    ell = [chr(ord("0") + i) for i in range(n_ell)]  # ellipsis dims: labels that are not letters

    def expand(t, k):
        head, dots, tail = t.partition("...")
        return list(head) + (ell[n_ell - k:] if dots else []) + list(tail)
    ins = [expand(t, k) for t, k in parsed]
    if arrow:
        if rhs.count("...") > 1 or any(c not in string.ascii_letters for c in rhs.replace("...", "")):
            raise ctx.error(f"bad output term {rhs!r} in equation {eq!r}")
        out = expand(rhs, n_ell)
    else:
        seen = [c for t in ins for c in t if c.isalpha()]
        out = ell + sorted(c for c in set(seen) if seen.count(c) == 1)
    if len(set(out)) != len(out) or any(c not in {c for t in ins for c in t} for c in out):
        raise ctx.error(f"output term of {eq!r} repeats a label or names one no operand has")
    return ins, out


def _table(ctx: KernelContext):
    """(output shape, dims, strides of each operand, number of output labels)."""
    ins, out = _terms(ctx)
    labels = out + sorted({c for t in ins for c in t} - set(out))
    extent: dict[str, int] = {}
    for t, spec in zip(ins, ctx.inputs):
        for c, n in zip(t, spec.shape):
            m = extent.setdefault(c, n)
            if m != n:  # only ellipsis dims broadcast (a 1 against any extent), as numpy.einsum
                if c.isalpha() or 1 not in (m, n):
                    raise ctx.error(f"label {c!r} has extents {m} and {n}")
                extent[c] = max(m, n)
    strides = []
    for t, spec in zip(ins, ctx.inputs):
        st, acc = dict.fromkeys(labels, 0), 1
        for c, n in zip(reversed(t), reversed(spec.shape)):
            if n == extent[c]:  # else a broadcast 1: stride 0
                st[c] += acc
            acc *= n
        strides.append(np.array([st[c] for c in labels], np.int64))
    return tuple(extent[c] for c in out), np.array([extent[c] for c in labels], np.int64), strides, len(out)


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    if not 1 <= len(ctx.inputs) <= 2:
        raise ctx.error(f"ge's Einsum takes one or two operands, got {len(ctx.inputs)}")
    ctx.require_dtype(0, NUM)
    if any(s.dtype != ctx.inputs[0].dtype for s in ctx.inputs):
        raise ctx.error("operands have different dtypes")
    return [TensorSpec(_table(ctx)[0], ctx.inputs[0].dtype)]


@register("Einsum", infer=_infer)
def _prepare(ctx: KernelContext) -> Launch:
    shape, dims, strides, n_out = _table(ctx)
    two = len(strides) == 2
    sb = strides[1] if two else np.zeros_like(strides[0])
    terms = math.prod(int(d) for d in dims[n_out:])
    nb = blocks(ctx, math.prod(shape), _NS * max(terms, 1))
    return tiled(einsum, (dims, strides[0], sb, n_out, int(two)), nb, inputs=(0, 1) if two else (0, 0))

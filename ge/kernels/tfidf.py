"""TfIdfVectorizer (opset 9): counts of the pool's n-grams in each row of integer tokens, weighted by mode.

The pool lists n-grams by size (`ngram_counts[n-1]` is where size n starts); the k-th n-gram of the pool
(over all sizes) counts into output column `ngram_indexes[k]`. A row's candidates are the tokens
x[s], x[s + d], ..., x[s + (n-1) d] for every start s, size n in [min_gram_length, max_gram_length] and
skip distance d in 1..max_skip_count + 1 (unigrams once, at d = 1), as the spec's reference walks its trie.
Instead of a trie, the host sorts each size's n-grams (prepare) and the kernel binary-searches them: the
same matches (a trie walk only goes on while the prefix is a pool prefix), no hash table in Numba, and
O(log pool) per candidate. A pool n-gram listed twice counts into the column of its last listing, as the
reference's trie keeps the last id. Strings (pool_strings) are not a ge element type.

Blocks (AI cores): whole rows.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .blocks import blocks, tiled
from .registry import KernelContext, Launch, TensorSpec, register
from .tiling import block_range

_MODES = {"TF": 0, "IDF": 1, "TFIDF": 2}
_NS = 20.0  # per candidate n-gram and skip, a guess of the binary search's cost (not measured)


@njit(nogil=True, cache=True)
def _find(x, s, d, n, grams, g0, e0, e1):
    """Index in [e0, e1) of the sorted size-n entry equal to x[s], x[s+d], ..., or -1."""
    lo, hi = e0, e1
    while lo < hi:
        mid = (lo + hi) // 2
        at = g0 + (mid - e0) * n
        c = 0
        for t in range(n):
            a, b = np.int64(x[s + t * d]), grams[at + t]
            if a != b:
                c = -1 if a < b else 1
                break
        if c == 0:
            return mid
        if c < 0:
            hi = mid
        else:
            lo = mid + 1
    return -1


@njit(nogil=True, cache=True)
def tfidf(x, y, grams, cols, eoff, goff, weights, rows, width, out_size, lo_n, hi_n, skips, mode, use_w,
          block_idx, block_dim):
    """eoff[n], eoff[n+1]: size n's entries; goff[n]: where their tokens start in grams."""
    r0, r1 = block_range(rows, 1, block_idx, block_dim)
    for r in range(r0, r1):
        out = y[r * out_size:(r + 1) * out_size]
        out[:] = 0
        base, first = r * width, lo_n
        for d in range(1, skips + 2):
            for s in range(width):
                if s + d * (first - 1) >= width:
                    break
                for n in range(first, hi_n + 1):
                    if s + d * (n - 1) >= width:
                        break
                    k = _find(x, base + s, d, n, grams, goff[n], eoff[n], eoff[n + 1])
                    if k >= 0:
                        out[cols[k]] += 1
            if first == 1:  # unigrams are counted once, not per skip distance
                first = 2
                if first > hi_n:
                    break
        for i in range(out_size):
            f = out[i]
            if mode == 1:
                out[i] = (weights[i] if use_w else 1) if f > 0 else 0
            elif mode == 2 and use_w:
                out[i] = weights[i] * f


def _tables(ctx: KernelContext):
    """The pool's n-grams of sizes [min, max], sorted per size: grams, cols, eoff, goff, out_size."""
    pool = np.asarray(ctx.attr("pool_int64s", []), np.int64)
    counts, indexes = list(ctx.attr("ngram_counts", [])), list(ctx.attr("ngram_indexes", []))
    lo_n, hi_n = int(ctx.attr("min_gram_length", 1)), int(ctx.attr("max_gram_length", 1))
    if ctx.attr("pool_strings"):
        raise ctx.error("pool_strings: strings are not a ge element type (pool_int64s only)")
    if not 1 <= lo_n <= hi_n or not indexes:
        raise ctx.error(f"needs 1 <= min_gram_length ({lo_n}) <= max_gram_length ({hi_n}) and ngram_indexes")
    per_size: list[dict] = [dict() for _ in range(hi_n + 1)]
    k = 0
    for i, start in enumerate(counts):
        n, end = i + 1, counts[i + 1] if i + 1 < len(counts) else len(pool)
        for j in range((end - start) // n):
            if lo_n <= n <= hi_n:
                if k >= len(indexes):
                    raise ctx.error(f"ngram_indexes has {len(indexes)} entries, the pool more n-grams")
                per_size[n][tuple(pool[start + j * n:start + (j + 1) * n])] = indexes[k]  # the last listing wins
            k += 1
    grams, cols, eoff, goff = [], [], [0], [0]
    for n in range(hi_n + 1):
        for g in sorted(per_size[n]):
            grams.extend(g)
            cols.append(per_size[n][g])
        eoff.append(len(cols))
        goff.append(len(grams))
    arr = lambda v: np.array(v, np.int64)  # noqa: E731
    return arr(grams), arr(cols), arr(eoff), arr(goff[:-1]), max(indexes) + 1, lo_n, hi_n


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, (np.int32, np.int64))
    x = ctx.inputs[0]
    if len(x.shape) not in (1, 2):
        raise ctx.error(f"X must be [C] or [N, C], got {x.shape}")
    out = max(ctx.attr("ngram_indexes", [0]) or [0]) + 1
    return [TensorSpec((out,) if len(x.shape) == 1 else (x.shape[0], out), np.float32)]


@register("TfIdfVectorizer", infer=_infer, since=9)
def _prepare(ctx: KernelContext) -> Launch:
    grams, cols, eoff, goff, out_size, lo_n, hi_n = _tables(ctx)
    mode = _MODES.get(ctx.attr("mode", ""))
    if mode is None:
        raise ctx.error(f"mode must be TF, IDF or TFIDF, got {ctx.attr('mode')!r}")
    w = np.asarray(ctx.attr("weights", []), np.float32)
    if len(w) and len(w) < out_size:
        raise ctx.error(f"weights has {len(w)} entries, the output {out_size} columns")
    x = ctx.inputs[0]
    rows, width = (1, x.shape[0]) if len(x.shape) == 1 else x.shape
    skips = int(ctx.attr("max_skip_count", 0))
    args = (grams, cols, eoff, goff, w if len(w) else np.zeros(1, np.float32), rows, width, out_size, lo_n, hi_n,
            skips, mode, int(len(w) > 0))
    return tiled(tfidf, args, blocks(ctx, rows, _NS * width * (skips + 1) * (hi_n - lo_n + 1)))

"""TreeEnsemble (ai.onnx.ml opset 5): each tree walks one row from its root to a leaf; the leaves' weights
aggregate per target (sum, average, min or max).

The host flattens the attributes into arrays (prepare): per node its feature, mode, split (float64: the
node cases' float32 and double splits compare exactly), its two children (a node index, or -1 - leaf), and
for a set-membership node its slice of `membership_values` (the NaN-delimited lists, in the order such
nodes appear in nodes_modes, as the spec says). A NaN feature goes the true way where
nodes_missing_value_tracks_true says so. Leaves accumulate into the output in its dtype, as the reference
does. post_transform other than NONE is refused (the reference does not apply it either).

Blocks (AI cores): whole rows.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .blocks import blocks, tiled
from .registry import KernelContext, Launch, TensorSpec, register
from .tiling import block_range

_FLOATS = (np.float32, np.float64)
_NS = 5.0  # per node visited, a guess (not measured)
LEQ, LT, GTE, GT, EQ, NEQ, MEMBER = range(7)


@njit(nogil=True, cache=True)
def _goes_true(v, m, split, members, lo, hi):
    if m == LEQ:
        return v <= split
    if m == LT:
        return v < split
    if m == GTE:
        return v >= split
    if m == GT:
        return v > split
    if m == EQ:
        return v == split
    if m == NEQ:
        return v != split
    for k in range(lo, hi):
        if v == members[k]:
            return True
    return False


@njit(nogil=True, cache=True)
def tree_ensemble(x, y, feat, mode, split, child, missing, mspan, members, roots, lw, lt, rows, features,
                  targets, agg, init, block_idx, block_dim):
    """child[2c], child[2c+1]: node c's true and false child; mspan[2c:2c+2]: its members; agg: 0 average,
    1 sum, 2 min, 3 max."""
    r0, r1 = block_range(rows, 1, block_idx, block_dim)
    for r in range(r0, r1):
        out = y[r * targets:(r + 1) * targets]
        out[:] = init
        for root in roots:
            c = root
            while c >= 0:
                v = np.float64(x[r * features + feat[c]])
                go = _goes_true(v, mode[c], split[c], members, mspan[2 * c], mspan[2 * c + 1])
                if not go and missing[c] and math.isnan(v):
                    go = True
                c = child[2 * c] if go else child[2 * c + 1]
            w, t = lw[-c - 1], lt[-c - 1]
            if agg == 0:
                out[t] += w / len(roots)
            elif agg == 1:
                out[t] += w
            elif agg == 2:
                out[t] = min(out[t], w)
            else:
                out[t] = max(out[t], w)


def _ints(ctx, name, n=None):
    v = np.asarray(ctx.attr(name, []), np.int64).reshape(-1)
    if n is not None and len(v) != n:
        raise ctx.error(f"{name} has {len(v)} entries, nodes_featureids {n}")
    return v


def _flatten(ctx: KernelContext):
    feat = _ints(ctx, "nodes_featureids")
    n = len(feat)
    mode = _ints(ctx, "nodes_modes", n)
    split = np.asarray(ctx.attr("nodes_splits", np.zeros(0)), np.float64).reshape(-1)
    tl, fl = _ints(ctx, "nodes_trueleafs", n), _ints(ctx, "nodes_falseleafs", n)
    tid, fid = _ints(ctx, "nodes_truenodeids", n), _ints(ctx, "nodes_falsenodeids", n)
    lw = np.asarray(ctx.attr("leaf_weights", np.zeros(0)), np.float64).reshape(-1)
    lt = _ints(ctx, "leaf_targetids")
    missing = _ints(ctx, "nodes_missing_value_tracks_true") if ctx.attr("nodes_missing_value_tracks_true") \
        else np.zeros(n, np.int64)
    if len(split) != n or len(lt) != len(lw) or len(missing) != n or (mode.size and (mode.min() < 0 or mode.max() > 6)):
        raise ctx.error("nodes_splits, nodes_modes and nodes_missing_value_tracks_true need one entry per node, "
                        "leaf_targetids one per leaf weight, modes 0-6")
    child = np.stack([np.where(tl != 0, -1 - tid, tid), np.where(fl != 0, -1 - fid, fid)], 1).reshape(-1)
    members = np.asarray(ctx.attr("membership_values", np.zeros(0)), np.float64).reshape(-1)
    mspan, at = np.zeros(2 * n, np.int64), 0
    for c in np.flatnonzero(mode == MEMBER):  # the NaN-delimited lists, in node order
        end = at
        while end < len(members) and not math.isnan(members[end]):
            end += 1
        if end == len(members) and at == len(members):
            raise ctx.error("membership_values has fewer lists than the set-membership nodes")
        mspan[2 * c:2 * c + 2] = at, end
        at = end + 1
    roots = _ints(ctx, "tree_roots")
    leaf_root = (tl[roots] != 0) & (fl[roots] != 0) & (tid[roots] == fid[roots])  # a tree that is one leaf
    roots = np.where(leaf_root, -1 - tid[roots], roots)
    return feat, mode, split, child, missing, mspan, members, roots, lw, lt


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, _FLOATS)
    x = ctx.inputs[0]
    if len(x.shape) != 2:
        raise ctx.error(f"X must be [N, features], got {x.shape}")
    return [TensorSpec((x.shape[0], int(ctx.attr("n_targets", 0))), x.dtype)]


@register("TreeEnsemble", infer=_infer, domain="ai.onnx.ml", since=5)
def _prepare(ctx: KernelContext) -> Launch:
    if int(ctx.attr("post_transform", 0)) != 0:
        raise ctx.error("post_transform other than NONE (0) is not supported")
    agg = int(ctx.attr("aggregate_function", 1))
    if agg not in (0, 1, 2, 3):
        raise ctx.error(f"aggregate_function must be 0-3, got {agg}")
    arrays = _flatten(ctx)
    feat, lt, roots = arrays[0], arrays[9], arrays[7]
    x = ctx.inputs[0]
    rows, features, targets = x.shape[0], x.shape[1], int(ctx.attr("n_targets", 0))
    if feat.size and (feat.min() < 0 or feat.max() >= features) or lt.size and (lt.min() < 0 or lt.max() >= targets):
        raise ctx.error(f"a feature id is outside [0, {features}) or a target id outside [0, {targets})")
    big = float(np.finfo(x.dtype).max)
    init = (0.0, 0.0, big, -big)[agg]
    return tiled(tree_ensemble, (*arrays, rows, features, targets, agg, init),
                 blocks(ctx, rows, _NS * max(len(roots), 1) * 8))

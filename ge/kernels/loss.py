"""NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: one kernel, the second a log-softmax over axis 1
in front of the first.

Input [N, C, d1...] is walked as [N, C, D] (D = d1 * ...), the target as [N, D]: loss[n, d] =
-w[t] * x[n, t, d] with t = target[n, d] (w[t] = 1 without weights), 0 where t == ignore_index. Reductions:
none (target's shape), sum, mean (the sum over the sum of the w[t] of the elements not ignored, as the
spec's reference does). SoftmaxCrossEntropyLoss's log_prob (its optional second output, a workspace when not
asked for) is the log-softmax of the scores over C, max-subtracted, in the input dtype.
A target outside [0, C) that is not ignore_index is an IndexError (ExecutionError at run time).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .registry import KernelContext, Launch, TensorSpec, register

NONE, SUM, MEAN = 0, 1, 2
_REDUCTIONS = {"none": NONE, "sum": SUM, "mean": MEAN}


@njit(nogil=True, cache=True, error_model="numpy")
def nll_loss(x, target, weight, loss, logp, N, C, D, softmax, has_w, ignore, reduction):
    """loss (N*D values, or 1 when reduced) from x [N, C, D] (log-softmaxed into logp first when softmax)."""
    src = x
    if softmax:
        for n in range(N):
            for d in range(D):
                top = x[n * C * D + d]
                for c in range(1, C):
                    top = max(top, x[(n * C + c) * D + d])
                s = 0.0
                for c in range(C):
                    s += math.exp(x[(n * C + c) * D + d] - top)
                ls = x.dtype.type(math.log(s))
                for c in range(C):
                    o = (n * C + c) * D + d
                    logp[o] = (x[o] - top) - ls
        src = logp
    total = x.dtype.type(0)
    wsum = x.dtype.type(0)
    for n in range(N):
        for d in range(D):
            t = target[n * D + d]
            v = x.dtype.type(0)
            w = x.dtype.type(0)
            if t != ignore:
                if t < 0 or t >= C:
                    raise IndexError("a target class is outside [0, C) and is not ignore_index")
                w = weight[t] if has_w else x.dtype.type(1)
                v = -src[(n * C + t) * D + d] * w
            if reduction == NONE:
                loss[n * D + d] = v
            total += v
            wsum += w
    if reduction == SUM:
        loss[0] = total
    elif reduction == MEAN:
        loss[0] = total / wsum


def _dims(ctx: KernelContext):
    x, t = ctx.inputs[0], ctx.inputs[1]
    if x.dtype not in (np.float32, np.float64):
        raise ctx.error(f"the input must be float32 or float64, got {x.dtype}")
    if t.dtype not in (np.int32, np.int64):
        raise ctx.error(f"the target must be int32 or int64, got {t.dtype}")
    if len(x.shape) < 2 or tuple(t.shape) != (x.shape[0],) + tuple(x.shape[2:]):
        raise ctx.error(f"input {x.shape} and target {t.shape}: the target must be [N, d1, ...] of an input "
                        "[N, C, d1, ...]")
    if ctx.has(2) and (tuple(ctx.inputs[2].shape) != (x.shape[1],) or ctx.inputs[2].dtype != x.dtype):
        raise ctx.error(f"weights must be {x.dtype} [{x.shape[1]}], got {ctx.inputs[2].dtype}{ctx.inputs[2].shape}")
    reduction = ctx.attr("reduction", "mean")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    if reduction not in _REDUCTIONS:
        raise ctx.error(f"reduction must be none, sum or mean, got {reduction!r}")
    N, C = x.shape[:2]
    return N, C, int(np.prod(x.shape[2:], dtype=np.int64)), _REDUCTIONS[reduction]


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    _, _, _, reduction = _dims(ctx)
    x = ctx.inputs[0]
    specs = [TensorSpec(ctx.inputs[1].shape if reduction == NONE else (), x.dtype)]
    if ctx.op_type == "SoftmaxCrossEntropyLoss" and ctx.n_outputs > 1:
        specs.append(TensorSpec(x.shape, x.dtype))
    return specs


def _prepare(ctx: KernelContext) -> Launch:
    N, C, D, reduction = _dims(ctx)
    x = ctx.inputs[0]
    softmax = ctx.op_type == "SoftmaxCrossEntropyLoss"
    ws = () if softmax and ctx.n_outputs > 1 else (TensorSpec((N * C * D if softmax else 1,), x.dtype),)
    ignore = ctx.attr("ignore_index", None)
    ignore = -(1 << 62) if ignore is None else int(ignore)  # no target equals it
    return Launch(nll_loss, (N, C, D, int(softmax), int(ctx.has(2)), ignore, reduction), ws,
                  inputs=(0, 1, 2 if ctx.has(2) else 0))


register("NegativeLogLikelihoodLoss", infer=_infer, since=12)(_prepare)
register("SoftmaxCrossEntropyLoss", infer=_infer, since=12)(_prepare)

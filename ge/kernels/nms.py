"""NonMaxSuppression: greedy per (batch, class), its output's length known only from the values.

As NonZero and Unique (select.py), infer reads the deciding inputs' values (`value_inputs`: all five): a
constant folds at compile time, run-time boxes make the node dynamic, which runtime_v2 prepares per input
value and runtime_v1 refuses with its static-plan rule. infer counts the selections with the kernel's own
compiled walk (write=False), so the kernel and the shape cannot disagree.

Per (batch, class): the boxes scoring above score_threshold (all when it is absent) in order of falling
score, ties by box index (a stable sort), each kept unless its IoU with a kept box exceeds iou_threshold,
until max_output_boxes_per_class are kept. An AI CPU op, as in GE. Corner boxes are [y1, x1, y2, x2] in either order of the
corners; center_point_box=1 boxes are [x, y, w, h]. IoU in float64. One block (the walk is sequential).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .registry import AICPU, KernelContext, Launch, TensorSpec, register

FLOATS = (np.float32, np.float64)


@njit(nogil=True, cache=True)
def _edges(boxes, i, center):
    """(y_min, x_min, y_max, x_max) of box i."""
    a, b = np.float64(boxes[i * 4]), np.float64(boxes[i * 4 + 1])
    c, d = np.float64(boxes[i * 4 + 2]), np.float64(boxes[i * 4 + 3])
    if center:
        return b - d / 2.0, a - c / 2.0, b + d / 2.0, a + c / 2.0
    return min(a, c), min(b, d), max(a, c), max(b, d)


@njit(nogil=True, cache=True)
def _overlaps(boxes, i, j, center, iou):
    y0, x0, y1, x1 = _edges(boxes, i, center)
    v0, u0, v1, u1 = _edges(boxes, j, center)
    w, h = min(x1, u1) - max(x0, u0), min(y1, v1) - max(y0, v0)
    if w <= 0.0 or h <= 0.0:
        return False
    inter = w * h
    a, b = (x1 - x0) * (y1 - y0), (u1 - u0) * (v1 - v0)
    union = a + b - inter
    if a <= 0.0 or b <= 0.0 or union <= 0.0:
        return False
    return inter / union > iou


@njit(nogil=True, cache=True)
def _nms(boxes, scores, out, write, batches, classes, n, max_out, iou, score, has_score, center):
    kept = np.empty(max(min(n, max_out), 1), np.int64)
    rows = 0
    for b in range(batches):
        for c in range(classes):
            s = scores[(b * classes + c) * n:(b * classes + c + 1) * n]
            order = np.argsort(-s.astype(np.float64), kind="mergesort")  # stable: ties by box index
            k = 0
            for i in order:
                if k >= max_out:
                    break
                if has_score and not s[i] > score:
                    continue
                ok = True
                for q in range(k):
                    if _overlaps(boxes[b * n * 4:(b + 1) * n * 4], i, kept[q], center, iou):
                        ok = False
                        break
                if ok:
                    kept[k] = i
                    k += 1
                    if write:
                        out[rows * 3], out[rows * 3 + 1], out[rows * 3 + 2] = b, c, i
                    rows += 1
    return rows


@njit(nogil=True, cache=True)
def nms(boxes, scores, out, batches, classes, n, max_out, iou, score, has_score, center):
    _nms(boxes, scores, out, True, batches, classes, n, max_out, iou, score, has_score, center)


def _args(ctx: KernelContext) -> tuple:
    boxes, scores = ctx.inputs[0], ctx.inputs[1]
    ctx.require_dtype(0, FLOATS)
    ctx.require_dtype(1, (boxes.dtype,))
    if len(boxes.shape) != 3 or boxes.shape[2] != 4 or len(scores.shape) != 3 or \
            (scores.shape[0], scores.shape[2]) != boxes.shape[:2]:
        raise ctx.error(f"needs boxes (B, N, 4) and scores (B, C, N); got {boxes.shape}, {scores.shape}")

    def scalar(i, default):
        if not ctx.has(i):
            return default, False
        v = np.asarray(ctx.value(i)).reshape(-1)
        return (v[0].item(), True) if v.size else (default, False)
    max_out = max(int(scalar(2, 0)[0]), 0)
    score, has_score = scalar(4, 0.0)
    return (boxes.shape[0], scores.shape[1], boxes.shape[1], max_out, float(scalar(3, 0.0)[0]), float(score),
            int(has_score), int(ctx.attr("center_point_box", 0)))


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    args = _args(ctx)
    flat = [np.array(ctx.value(i)).reshape(-1) for i in (0, 1)]  # writable copies (one Numba type)
    rows = _nms(*flat, np.empty(0, np.int64), False, *args)
    return [TensorSpec((rows, 3), np.int64)]


@register("NonMaxSuppression", infer=_infer, value_inputs=(0, 1, 2, 3, 4), since=10, engine=AICPU)  # as GE
def _prepare(ctx: KernelContext) -> Launch:
    return Launch(nms, _args(ctx), inputs=(0, 1))

"""The ONNX-ML support vector machines (SVMClassifier, SVMRegressor) on the host, as ml.py's other ops.

Kernels as the spec names them (LINEAR, POLY, RBF, SIGMOID with kernel_params gamma, coef0, degree) against
the support vectors; a classifier with vectors_per_class is one-vs-one: for classes i < j, class i's vectors
weighted by coefficient row j-1 and class j's by row i, plus rho of the pair; a positive score is a vote for
i, the label is the first class with most votes, and the scores are the pairs' (two classes: the score and
its opposite), as onnxruntime/core/providers/cpu/ml/svmclassifier.cc gives them. Without support vectors it
is linear (a score per class). Probabilities (prob_a / prob_b: Platt scaling, pairwise coupling) are refused.
"""
from __future__ import annotations

import numpy as np

from .ml import ML, _a, _classify, _labels, _rows, post_transform
from .registry import register_host


def _svm_kernel(call, x, vectors):
    """[N, V]: kernel_type of each row against each vector (LINEAR, POLY, RBF, SIGMOID; kernel_params gamma,
    coef0, degree)."""
    kind = _a(call, "kernel_type", "LINEAR")
    params = list(call.attrs.get("kernel_params", [])) + [0.0, 0.0, 0.0]
    gamma, coef0, degree = (float(p) for p in params[:3])
    if kind == "RBF":
        d = (x * x).sum(1)[:, None] - 2 * x @ vectors.T + (vectors * vectors).sum(1)[None, :]
        return np.exp(-gamma * np.maximum(d, 0))
    dot = x @ vectors.T
    if kind == "LINEAR":
        return dot
    if kind == "POLY":
        return (gamma * dot + coef0) ** degree
    if kind == "SIGMOID":
        return np.tanh(gamma * dot + coef0)
    raise call.error(f"kernel_type '{kind}': one of LINEAR, POLY, RBF, SIGMOID")


@register_host("SVMClassifier", domain=ML)
def svm_classifier(call, args):
    labels, _ = _labels(call)
    k = len(labels)
    x = _rows(call, args[0]).astype(np.float32).astype(np.float64)
    coef = np.asarray(call.attrs.get("coefficients", []), np.float64)
    rho = np.asarray(call.attrs.get("rho", []), np.float64)
    per_class = [int(v) for v in call.attrs.get("vectors_per_class", [])]
    if call.attrs.get("prob_a"):
        raise call.error("probabilities (prob_a, prob_b: Platt scaling and pairwise coupling) are not supported "
                         "yet; export the SVC without probability=True")
    if not per_class:   # liblinear mode: a linear score per class
        if coef.size % max(k, 1) or coef.size // k != x.shape[1]:
            raise call.error(f"{coef.size} coefficients for {k} classes of {x.shape[1]} features")
        z = x @ coef.reshape(k, -1).T + (rho[0] if rho.size else 0.0)
        y, scores = _classify(call, z) if k != 2 else (labels[np.argmax(z, axis=1)], post_transform(call, z))
        return [y, scores.astype(np.float32)]
    if len(per_class) != k:
        raise call.error(f"vectors_per_class has {len(per_class)} entries for {k} classes")
    sv = np.asarray(call.attrs.get("support_vectors", []), np.float64)
    count = sum(per_class)
    if count == 0 or sv.size != count * x.shape[1]:
        raise call.error(f"{sv.size} support vector values for {count} vectors of {x.shape[1]} features")
    pairs = k * (k - 1) // 2
    if coef.size < (k - 1) * count or rho.size < pairs:
        raise call.error(f"{coef.size} coefficients and {rho.size} rho for {k} classes of {count} vectors")
    kern = _svm_kernel(call, x, sv.reshape(count, -1))
    coef = coef[:(k - 1) * count].reshape(k - 1, count)
    start = np.concatenate([[0], np.cumsum(per_class)])
    scores = np.empty((x.shape[0], pairs))
    votes = np.zeros((x.shape[0], k), np.int64)
    c = 0
    for i in range(k - 1):   # one-vs-one: class i's vectors weighted by row j-1, class j's by row i
        for j in range(i + 1, k):
            si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
            s = kern[:, si] @ coef[j - 1, si] + kern[:, sj] @ coef[i, sj] + rho[c]
            scores[:, c] = s
            votes[np.arange(len(s)), np.where(s > 0, i, j)] += 1
            c += 1
    y = labels[np.argmax(votes, axis=1)]
    if k == 2:   # one classifier: its score and its opposite (onnxruntime's additional score)
        s = post_transform(call, scores)
        both = np.concatenate([-s, s], axis=1) if _a(call, "post_transform", "NONE") == "NONE" else \
            np.concatenate([1.0 - s, s], axis=1) if _a(call, "post_transform", "NONE") == "LOGISTIC" else s
        return [y, both.astype(np.float32)]
    return [y, post_transform(call, scores).astype(np.float32)]


@register_host("SVMRegressor", domain=ML)
def svm_regressor(call, args):
    x = _rows(call, args[0]).astype(np.float32).astype(np.float64)
    coef = np.asarray(call.attrs.get("coefficients", []), np.float64)
    rho = np.asarray(call.attrs.get("rho", [0.0]), np.float64)
    n_sv = int(call.attrs.get("n_supports", 0))
    if n_sv > 0:
        sv = np.asarray(call.attrs.get("support_vectors", []), np.float64)
        if sv.size != n_sv * x.shape[1] or coef.size < n_sv:
            raise call.error(f"{sv.size} support vector values and {coef.size} coefficients for {n_sv} vectors "
                             f"of {x.shape[1]} features")
        z = _svm_kernel(call, x, sv.reshape(n_sv, -1)) @ coef[:n_sv]
    else:
        if coef.size != x.shape[1]:
            raise call.error(f"{coef.size} coefficients for {x.shape[1]} features")
        z = x @ coef
    z = z + rho[0]
    if call.attrs.get("one_class", 0):
        z = np.where(z > 0, 1.0, -1.0)
    return [post_transform(call, z.reshape(-1, 1)).astype(np.float32)]

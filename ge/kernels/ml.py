"""The ONNX-ML ops scikit-learn exports use (domain ai.onnx.ml), on the host.

They run once per request on a few rows of features: host functions over numpy (OpKernel.host), not Numba
kernels (no compile, nothing tiled): host-driven on runtime_v2, host tasks on runtime_v1; labels may be
strings (ge/kernels/strings.py) and ZipMap gives a sequence of maps (Value.kind "seq(map(K))"). Binarizer
and ArrayFeatureExtractor are ONNX functions (onnx_builders.py) and TreeEnsemble (opset 5) a kernel
(tree_ensemble.py). Semantics are the ONNX-ML operator specs; where the spec leaves it open (a binary
classifier scored by one column, its labels and the scores it writes) ge gives what onnxruntime gives
(onnxruntime/core/providers/cpu/ml/ml_common.h, linearclassifier.cc, tree_ensemble_aggregator.h; the SVMs are
in ml_svm.py), checked by
tests/ort/test_ml.py against onnxruntime on scikit-learn exports and hand-built nodes. Scores are computed
in float64 and written as float32 (onnxruntime sums in float for float inputs: agreement within ~1e-6).
"""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import STRING
from .registry import register_host

ML = "ai.onnx.ml"


def _a(call, name, default=None):
    v = call.attrs.get(name, default)
    return v.decode() if isinstance(v, bytes) else v


def _floats(call, name):
    """A float list attribute, or its *_as_tensor twin (opset 3 of the tree ensembles)."""
    t = call.attrs.get(name + "_as_tensor")
    v = t if t is not None else call.attrs.get(name)
    return None if v is None else np.asarray(v, np.float64).reshape(-1)


def _rows(call, x) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == 1:
        return x.reshape(1, -1)
    if x.ndim != 2:
        raise call.error(f"input must be [N, C] (or [C]), got {list(x.shape)}")
    return x


def _labels(call):
    """(labels array, is_string) from classlabels_strings / classlabels_int64s (LinearClassifier and the
    SVMs call it classlabels_ints)."""
    return _labels_of(call.attrs)


def _labels_of(attrs):
    s = attrs.get("classlabels_strings")
    if s:
        return np.array([v.decode() if isinstance(v, bytes) else v for v in s], dtype=object), True
    ints = attrs.get("classlabels_int64s")
    if ints is None:
        ints = attrs.get("classlabels_ints", [])
    return np.asarray(ints, np.int64), False


def output_types(op_type: str, attrs, inputs) -> list | None:
    """[(dtype, shape or None, kind)] of an ONNX-ML op's outputs from its attributes and input values
    (ONNX's shape inference types few of them: the importer asks here for the rest); None: not an op here."""
    x = inputs[0] if inputs else None
    shape = None if x is None or x.shape is None else tuple(x.shape)
    n = shape[:1] if shape and len(shape) == 2 else (1,) if shape and len(shape) == 1 else None
    f32 = np.dtype(np.float32)
    labels, is_str = _labels_of(attrs)
    label = (STRING if is_str else np.dtype(np.int64), None if n is None else n, "tensor")
    if op_type in ("Scaler", "Normalizer"):
        return [(f32, shape, "tensor")]
    if op_type == "Imputer":
        return [(None if x is None else x.dtype, shape, "tensor")]
    if op_type == "LinearRegressor":
        return [(f32, None if n is None else (*n, int(attrs.get("targets", 1))), "tensor")]
    if op_type == "TreeEnsembleRegressor":
        return [(f32, None if n is None else (*n, int(attrs.get("n_targets", 1))), "tensor")]
    if op_type in ("LinearClassifier", "TreeEnsembleClassifier"):
        k = len(labels)
        return [label, (f32, None if n is None or not k else (*n, k), "tensor")]
    if op_type == "SVMClassifier":   # one-vs-one: a score per pair of classes (2 for two classes)
        k = len(labels)
        width = k if not attrs.get("vectors_per_class") or attrs.get("prob_a") else max(k * (k - 1) // 2, 2)
        return [label, (f32, None if n is None or not k else (*n, width), "tensor")]
    if op_type == "SVMRegressor":
        return [(f32, None if n is None else (*n, 1), "tensor")]
    if op_type == "ZipMap":
        return [(f32, None, "seq(map(string))" if is_str else "seq(map(int64))")]
    if op_type in ("LabelEncoder", "CategoryMapper"):
        return None   # onnx types these
    if op_type == "OneHotEncoder":
        k = len(attrs.get("cats_strings") or attrs.get("cats_int64s") or [])
        return [(f32, None if shape is None else (*shape, k), "tensor")]
    if op_type == "FeatureVectorizer":
        return [(f32, None if n is None else (*n, sum(int(d) for d in attrs.get("inputdimensions", []))), "tensor")]
    return None


def post_transform(call, z: np.ndarray) -> np.ndarray:
    kind = _a(call, "post_transform", "NONE")
    if kind == "NONE":
        return z
    if kind == "LOGISTIC":
        return 1.0 / (1.0 + np.exp(-z))
    if kind == "SOFTMAX":
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    if kind == "SOFTMAX_ZERO":   # softmax over the non-zero scores; zeros stay zero (onnxruntime's)
        nz = z != 0
        m = np.where(nz, z, -np.inf).max(axis=1, keepdims=True)
        e = np.where(nz, np.exp(z - np.where(np.isfinite(m), m, 0)), 0.0)
        s = e.sum(axis=1, keepdims=True)
        return np.where(s > 0, e / np.where(s > 0, s, 1), 0.0)
    raise call.error(f"post_transform '{kind}' is not supported (NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO)")


def _classify(call, scores: np.ndarray, weights_positive: bool = False):
    """Labels and written scores of a classifier from its raw per-class scores [N, K] (K = 1: binary on one
    score, onnxruntime's rule: the second column is the score, the first its complement)."""
    labels, _ = _labels(call)
    kind = _a(call, "post_transform", "NONE")
    if scores.shape[1] == 1 and len(labels) == 2:
        s = scores[:, 0]
        if kind == "NONE" and weights_positive:   # the score is a probability
            pick = s > 0.5
            both = np.stack([1.0 - s, s], axis=1)
        else:
            pick = s > 0
            t = post_transform(call, s.reshape(-1, 1))[:, 0]
            both = np.stack([1.0 - t if kind == "LOGISTIC" else -t, t], axis=1)
        return labels[pick.astype(np.int64)], both
    z = post_transform(call, scores)
    if len(labels) != scores.shape[1]:
        raise call.error(f"{len(labels)} class labels for {scores.shape[1]} scores a row")
    return labels[np.argmax(scores, axis=1)], z


# -- preprocessing ------------------------------------------------------------------------------------

@register_host("Scaler", domain=ML)
def scaler(call, args):
    x = np.asarray(args[0], np.float64)
    offset = np.asarray(call.attrs.get("offset", [0.0]), np.float64)
    scale = np.asarray(call.attrs.get("scale", [1.0]), np.float64)
    c = x.shape[-1] if x.ndim else 1
    for name, v in (("offset", offset), ("scale", scale)):
        if v.size not in (1, c):
            raise call.error(f"{name} has {v.size} values for {c} features")
    return [((x - offset) * scale).astype(np.float32)]


@register_host("Normalizer", domain=ML)
def normalizer(call, args):
    x0 = np.asarray(args[0])
    x = _rows(call, x0).astype(np.float64)
    norm = _a(call, "norm", "MAX")
    if norm == "MAX":
        d = x.max(axis=1, keepdims=True)
    elif norm == "L1":
        d = np.abs(x).sum(axis=1, keepdims=True)
    elif norm == "L2":
        d = np.sqrt((x * x).sum(axis=1, keepdims=True))
    else:
        raise call.error(f"norm '{norm}': one of MAX, L1, L2")
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(d != 0, x / np.where(d != 0, d, 1), x)
    return [y.astype(np.float32).reshape(x0.shape)]


@register_host("Imputer", domain=ML)
def imputer(call, args):
    x = np.asarray(args[0])
    if x.dtype.kind == "f":
        values = np.asarray(call.attrs.get("imputed_value_floats", []), x.dtype)
        bad = float(call.attrs.get("replaced_value_float", 0.0))
        hit = np.isnan(x) if np.isnan(bad) else x == bad
    else:
        values = np.asarray(call.attrs.get("imputed_value_int64s", []), x.dtype)
        hit = x == int(call.attrs.get("replaced_value_int64", 0))
    c = x.shape[-1] if x.ndim else 1
    if values.size not in (1, c):
        raise call.error(f"{values.size} imputed values for {c} features")
    return [np.where(hit, np.broadcast_to(values, x.shape) if x.ndim else values[0], x)]


@register_host("FeatureVectorizer", domain=ML)
def feature_vectorizer(call, args):
    dims = [int(d) for d in call.attrs.get("inputdimensions", [])]
    if len(dims) != len(args):
        raise call.error(f"inputdimensions has {len(dims)} entries for {len(args)} inputs")
    xs = [np.asarray(a) for a in args]
    n = xs[0].shape[0] if xs[0].ndim > 1 else 1
    out = np.zeros((n, sum(dims)), np.float32)
    at = 0
    for x, d in zip(xs, dims):
        x = x.reshape(n, -1).astype(np.float32)
        k = min(d, x.shape[1])
        out[:, at:at + k] = x[:, :k]
        at += d
    return [out]


@register_host("OneHotEncoder", domain=ML)
def one_hot_encoder(call, args):
    x = np.asarray(args[0])
    cats = call.attrs.get("cats_strings")
    if cats:
        cats = [c.decode() if isinstance(c, bytes) else c for c in cats]
        keys = [str(v) for v in x.reshape(-1)]
    else:
        cats = [int(c) for c in call.attrs.get("cats_int64s", [])]
        keys = [int(v) for v in x.reshape(-1)]
    where = {c: i for i, c in enumerate(cats)}
    out = np.zeros((len(keys), len(cats)), np.float32)
    for r, k in enumerate(keys):
        i = where.get(k)
        if i is not None:
            out[r, i] = 1.0
        elif not call.attrs.get("zeros", 1):
            raise call.error(f"category {k!r} is not among cats and zeros=0")
    return [out.reshape(*x.shape, len(cats))]


@register_host("LabelEncoder", domain=ML)
def label_encoder(call, args):
    x = np.asarray(args[0])
    if call.opset < 2:   # classes_strings: string -> its index, int -> its string
        classes = [c.decode() if isinstance(c, bytes) else c for c in call.attrs.get("classes_strings", [])]
        if x.dtype == STRING:
            keys, values = classes, np.arange(len(classes), dtype=np.int64)
            default = np.int64(call.attrs.get("default_int64", -1))
        else:
            keys, values = list(range(len(classes))), np.array(classes, dtype=object)
            default = _a(call, "default_string", "_Unused")
    else:
        keys, values, default = _encoder_table(call, x)
    table = {_key(k): v for k, v in zip(keys, values)}
    out_dtype = call.out_dtypes[0] if call.out_dtypes and call.out_dtypes[0] is not None else values.dtype
    flat = x.reshape(-1)
    out = np.empty(flat.shape, out_dtype)
    for i, v in enumerate(flat):
        out[i] = table.get(_key(v), default)
    return [out.reshape(x.shape)]


def _key(v):
    """A dict key that finds NaN (opset 4: a NaN key maps NaN inputs) and reads 1.0 and 1 alike."""
    if isinstance(v, (float, np.floating)):
        return "nan" if np.isnan(v) else float(v)
    if isinstance(v, (np.integer, int)) and not isinstance(v, bool):
        return int(v)
    return v


def _encoder_table(call, x):
    keys = None
    for name in ("keys_tensor", "keys_strings", "keys_int64s", "keys_floats"):
        if call.attrs.get(name) is not None:
            keys = call.attrs[name]
            break
    values = default = None
    for name, dt, dname, dflt in (("values_tensor", None, "default_tensor", None),
                                  ("values_strings", object, "default_string", "_Unused"),
                                  ("values_int64s", np.int64, "default_int64", -1),
                                  ("values_floats", np.float32, "default_float", -0.0)):
        if call.attrs.get(name) is not None:
            v = call.attrs[name]
            values = np.asarray(v) if dt is None else np.array(
                [s.decode() if isinstance(s, bytes) else s for s in v] if dt is object else v, dtype=dt)
            d = call.attrs.get(dname)
            if d is None and dt is None:   # values_tensor without default_tensor: the type's default
                d = {"O": "_Unused", "i": -1}.get(values.dtype.kind, -0.0)
            default = (np.asarray(d).reshape(-1)[0] if isinstance(d, np.ndarray) else d) if d is not None else dflt
            break
    if keys is None or values is None:
        raise call.error("needs keys_* and values_* attributes")
    keys = list(np.asarray(keys).reshape(-1)) if isinstance(keys, np.ndarray) else list(keys)
    keys = [k.decode() if isinstance(k, bytes) else k for k in keys]
    if len(keys) != len(values):
        raise call.error(f"{len(keys)} keys and {len(values)} values")
    return keys, values.reshape(-1), default


@register_host("CategoryMapper", domain=ML)
def category_mapper(call, args):
    x = np.asarray(args[0])
    strings = [s.decode() if isinstance(s, bytes) else s for s in call.attrs.get("cats_strings", [])]
    ints = [int(i) for i in call.attrs.get("cats_int64s", [])]
    flat = x.reshape(-1)
    if x.dtype == STRING:
        table, default = dict(zip(strings, ints)), int(call.attrs.get("default_int64", -1))
        out = np.array([table.get(s, default) for s in flat], np.int64)
    else:
        table, default = dict(zip(ints, strings)), _a(call, "default_string", "_Unused")
        out = np.array([table.get(int(v), default) for v in flat], dtype=object)
    return [out.reshape(x.shape)]


@register_host("ZipMap", domain=ML)
def zip_map(call, args):
    x = _rows(call, args[0])
    labels, is_str = _labels(call)
    if len(labels) != x.shape[1]:
        raise call.error(f"{len(labels)} class labels for {x.shape[1]} columns")
    keys = [str(k) if is_str else int(k) for k in labels]
    return [[dict(zip(keys, map(float, row))) for row in x.astype(np.float32)]]


@register_host("DictVectorizer", domain=ML)
def dict_vectorizer(call, args):
    maps = args[0] if isinstance(args[0], list) else [args[0]]
    vocab = call.attrs.get("string_vocabulary") or call.attrs.get("int64_vocabulary") or []
    vocab = [v.decode() if isinstance(v, bytes) else v for v in vocab]
    where = {k: i for i, k in enumerate(vocab)}
    dtype = call.out_dtypes[0] if call.out_dtypes and call.out_dtypes[0] is not None else np.float32
    out = np.zeros((len(maps), len(vocab)), dtype)
    for r, m in enumerate(maps):
        for k, v in m.items():
            i = where.get(k.decode() if isinstance(k, bytes) else k)
            if i is not None:
                out[r, i] = v
    return [out]


# -- linear models --------------------------------------------------------------------------------------

def _linear(call, x, n_targets):
    x = _rows(call, x).astype(np.float64)
    coef = np.asarray(call.attrs.get("coefficients", []), np.float64)
    if coef.size != n_targets * x.shape[1]:
        raise call.error(f"{coef.size} coefficients for {n_targets} targets of {x.shape[1]} features")
    z = x @ coef.reshape(n_targets, x.shape[1]).T
    b = np.asarray(call.attrs.get("intercepts", []), np.float64)
    if b.size:
        z = z + b.reshape(1, -1)
    return z


@register_host("LinearRegressor", domain=ML)
def linear_regressor(call, args):
    z = _linear(call, args[0], int(call.attrs.get("targets", 1)))
    return [post_transform(call, z).astype(np.float32)]


@register_host("LinearClassifier", domain=ML)
def linear_classifier(call, args):
    labels, _ = _labels(call)
    coef = np.asarray(call.attrs.get("coefficients", []))
    x = _rows(call, args[0])
    n_targets = coef.size // max(x.shape[1], 1)
    z = _linear(call, x, n_targets)
    if n_targets == 1 and len(labels) == 1:   # one label: it, or the empty label / -1 below the threshold
        pick = z[:, 0] > 0
        other = np.array(["" if labels.dtype == STRING else -1], labels.dtype)
        return [np.where(pick, labels[0], other[0]).astype(labels.dtype), post_transform(call, z).astype(np.float32)]
    y, scores = _classify(call, z)
    return [y, scores.astype(np.float32)]


# -- tree ensembles -------------------------------------------------------------------------------------

_MODES = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3, "BRANCH_EQ": 4, "BRANCH_NEQ": 5,
          "LEAF": 6}


class _Trees:
    """The nodes of an ensemble as arrays: per global node its feature, mode, split, true/false successor."""

    def __init__(self, call):
        tree = np.asarray(call.attrs.get("nodes_treeids", []), np.int64)
        node = np.asarray(call.attrs.get("nodes_nodeids", []), np.int64)
        n = len(tree)
        self.index = {(int(t), int(i)): k for k, (t, i) in enumerate(zip(tree, node))}
        modes = [m.decode() if isinstance(m, bytes) else m for m in call.attrs.get("nodes_modes", [])]
        if len(modes) != n or any(m not in _MODES for m in modes):
            raise call.error("nodes_modes must give one of " + ", ".join(_MODES) + " per node")
        self.mode = np.array([_MODES[m] for m in modes], np.int64)
        self.feature = np.asarray(call.attrs.get("nodes_featureids", [0] * n), np.int64)
        self.split = _floats(call, "nodes_values")
        self.split = np.zeros(n) if self.split is None else self.split
        tracks = np.asarray(call.attrs.get("nodes_missing_value_tracks_true", [0] * n), np.int64)
        self.missing_true = tracks.astype(bool) if tracks.size == n else np.zeros(n, bool)
        t_ids = np.asarray(call.attrs.get("nodes_truenodeids", [0] * n), np.int64)
        f_ids = np.asarray(call.attrs.get("nodes_falsenodeids", [0] * n), np.int64)
        leaf = self.mode == 6
        try:
            self.true = np.array([k if leaf[k] else self.index[(int(tree[k]), int(t_ids[k]))] for k in range(n)],
                                 np.int64)
            self.false = np.array([k if leaf[k] else self.index[(int(tree[k]), int(f_ids[k]))] for k in range(n)],
                                  np.int64)
        except KeyError as e:
            raise call.error(f"a branch points at node {e.args[0]} (tree, node), which is not defined") from None
        # a tree's root: its first node that no branch points at
        child = set(self.true[~leaf].tolist()) | set(self.false[~leaf].tolist())
        roots: dict[int, int] = {}
        for k in range(n):
            if k not in child:
                roots.setdefault(int(tree[k]), k)
        self.roots = np.array(list(roots.values()), np.int64)
        self.leaf = leaf

    def leaves(self, x: np.ndarray) -> np.ndarray:
        """[N, trees]: the leaf each row reaches in each tree."""
        at = np.broadcast_to(self.roots, (x.shape[0], len(self.roots))).copy()
        rows = np.arange(x.shape[0])[:, None]
        for _ in range(len(self.mode) + 1):
            inner = ~self.leaf[at]
            if not inner.any():
                return at
            v = x[rows, self.feature[at]]
            s, m = self.split[at], self.mode[at]
            with np.errstate(invalid="ignore"):
                go = np.select([m == 0, m == 1, m == 2, m == 3, m == 4, m == 5],
                               [v <= s, v < s, v >= s, v > s, v == s, v != s], False)
            go |= np.isnan(v) & self.missing_true[at]
            at = np.where(inner, np.where(go, self.true[at], self.false[at]), at)
        raise ValueError("the trees have a cycle")


def _tree_scores(call, x, prefix, n_out):
    """Raw scores [N, n_out]: per reached leaf, its weights added to their class/target column."""
    trees = _Trees(call)
    x = _rows(call, x).astype(np.float64)
    if len(trees.feature) and (trees.feature.max(initial=0) >= x.shape[1] or trees.feature.min(initial=0) < 0):
        raise call.error(f"a node reads feature {trees.feature.max()}, the input has {x.shape[1]}")
    try:
        leaves = trees.leaves(x)
    except ValueError as e:
        raise call.error(str(e)) from None
    ids = np.asarray(call.attrs.get(f"{prefix}_ids", []), np.int64)
    weights = _floats(call, f"{prefix}_weights")
    where = np.array([trees.index.get((int(t), int(i)), -1) for t, i in zip(
        call.attrs.get(f"{prefix}_treeids", []), call.attrs.get(f"{prefix}_nodeids", []))], np.int64)
    if (where < 0).any():
        raise call.error(f"{prefix}_nodeids names a node the trees do not define")
    # per global leaf: its (column, weight) pairs as a dense [leaves, n_out] table
    table = np.zeros((len(trees.mode), n_out))
    if (ids >= n_out).any():
        raise call.error(f"{prefix}_ids reaches {ids.max()}, there are {n_out} outputs")
    np.add.at(table, (where, ids), weights if weights is not None else 0.0)
    return table, leaves, weights


@register_host("TreeEnsembleRegressor", domain=ML)
def tree_ensemble_regressor(call, args):
    n_out = int(call.attrs.get("n_targets", 1))
    table, leaves, _ = _tree_scores(call, args[0], "target", n_out)
    per_tree = table[leaves]   # [N, trees, n_out]
    agg = _a(call, "aggregate_function", "SUM")
    if agg == "SUM":
        z = per_tree.sum(axis=1)
    elif agg == "AVERAGE":
        z = per_tree.sum(axis=1) / max(leaves.shape[1], 1)
    elif agg == "MIN":
        z = per_tree.min(axis=1)
    elif agg == "MAX":
        z = per_tree.max(axis=1)
    else:
        raise call.error(f"aggregate_function '{agg}': one of SUM, AVERAGE, MIN, MAX")
    base = _floats(call, "base_values")
    if base is not None and base.size:
        z = z + base.reshape(1, -1)
    out = call.out_dtypes[0] if call.out_dtypes and call.out_dtypes[0] is not None else np.float32
    return [post_transform(call, z).astype(out)]   # opset 3 on doubles gives doubles (onnxruntime's)


@register_host("TreeEnsembleClassifier", domain=ML)
def tree_ensemble_classifier(call, args):
    labels, _ = _labels(call)
    ids = np.asarray(call.attrs.get("class_ids", []), np.int64)
    n_out = max(int(ids.max(initial=0)) + 1, 1) if len(labels) == 2 and (ids.max(initial=0) == 0) else len(labels)
    table, leaves, weights = _tree_scores(call, args[0], "class", n_out)
    z = table[leaves].sum(axis=1)
    base = _floats(call, "base_values")
    if base is not None and base.size:
        z = z + base[:n_out].reshape(1, -1)
    positive = weights is None or bool((weights >= 0).all())
    y, scores = _classify(call, z, weights_positive=positive)
    return [y, scores.astype(np.float32)]

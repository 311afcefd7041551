"""fold_batchnorm: fold inference BatchNormalization, and per-channel constant Mul / Add, into the Conv
(or the BatchNormalization) before them.

    Conv(x, W, B) -> BatchNormalization(scale, bias, mean, var, eps)
        == Conv(x, W * s, (B - mean) * s + bias)            with s = scale / sqrt(var + eps)
    Conv(x, W, B) -> Mul(c)  == Conv(x, W * c, B * c)       Conv(x, W, B) -> Add(c)  == Conv(x, W, B + c)
    BatchNormalization(x, scale, bias, ...) -> Mul(c)  == BatchNormalization(x, scale * c, bias * c, ...)
    BatchNormalization(x, scale, bias, ...) -> Add(c)  == BatchNormalization(x, scale, bias + c, ...)

c is per-channel: a constant that broadcasts along the channel axis (1) only, e.g. [C,1,1], [1,C,1,1] or a
scalar, so the result keeps the Conv's shape. (DenseNet and Inception-v2 follow each BatchNormalization
with such a Mul and Add, built from Unsqueeze of constants: fold_constants has folded those first.)

Algorithm, one sweep in order, matching each BatchNormalization / Mul / Add against its producer:
  Step 1: match. The producer is a Conv with constant W (and B, if any), or an inference
          BatchNormalization with constant parameters; its output is read by this node alone and is not a
          graph output; the other operands are constants of the right shape and dtype.
  Step 2: compute the new constants in float64, cast back to the weights' dtype.
  Step 3: replace producer and node by one Conv (or BatchNormalization) that keeps this node's output
          name. Since the sweep visits readers after producers, a chain Conv -> BN -> Mul -> Add folds
          into one Conv in one sweep.

Limits: weights that are not constant, training-mode BatchNormalization (or one whose extra outputs are
read), a Conv read by several nodes, and a BatchNormalization after anything but a Conv stay as they are
(the BatchNormalization kernel runs). ConvTranspose is not folded (its W is laid out [C_in, C_out/g, ...]).
Invariant: outputs are unchanged up to float rounding; no graph output is renamed.
"""
from __future__ import annotations

import numpy as np

from .pattern import const_of, only_reader, producer, replace_pattern


def _folded(name: str) -> str:
    """The name of a folded constant: its original name + "_folded", once however often it is folded."""
    return name.split("_folded")[0] + "_folded"


def _bn_params(graph, bn):
    """(scale, bias, mean, var, eps) as float64 arrays of an inference BN with constant parameters."""
    if len(bn.inputs) != 5 or bn.attrs.get("training_mode", 0) or bn.attrs.get("spatial", 1) != 1:
        return None
    if any(v.users or v in graph.outputs for v in bn.outputs[1:]):
        return None
    params = [const_of(v) for v in bn.inputs[1:]]
    if any(p is None or p.ndim != 1 for p in params):
        return None
    return [p.astype(np.float64) for p in params] + [float(bn.attrs.get("epsilon", 1e-5))]


def _per_channel(c, rank: int, channels: int) -> np.ndarray | None:
    """c as a float64 vector over the channel axis 1 of a rank-`rank` tensor, if it broadcasts only there."""
    if c is None or c.ndim > rank or rank < 2 or not np.all(np.isfinite(c)):
        return None
    dims = (1,) * (rank - c.ndim) + c.shape
    if any(d != 1 for i, d in enumerate(dims) if i != 1) or dims[1] not in (1, channels):
        return None
    return np.broadcast_to(c.astype(np.float64).reshape(-1), (channels,))


def _conv_weights(graph, conv, node):
    """(W, B) as float64 of a Conv with constant weights read only by `node`, else None."""
    w, b = const_of(conv.inputs[1]), conv.inputs[2] if len(conv.inputs) > 2 else None
    if w is None or w.dtype.kind != "f" or (b is not None and b.const is None):
        return None
    if not only_reader(graph, conv.outputs[0], node):
        return None
    return w.astype(np.float64), None if b is None else b.const.astype(np.float64)


def _channel_const(graph, node, x, rank, channels, dtype):
    """The per-channel constant operand of a Mul/Add whose other operand is `x`."""
    if len(node.inputs) != 2 or x not in node.inputs or node.inputs[0] is node.inputs[1]:
        return None
    c = node.inputs[1] if node.inputs[0] is x else node.inputs[0]
    if c.const is None or c.dtype != dtype:
        return None
    return _per_channel(c.const, rank, channels)


def _fold_into_conv(graph, conv, node) -> bool:
    # Step 1: match Conv -> BN / Mul / Add
    wb = _conv_weights(graph, conv, node)
    if wb is None:
        return False
    w, b = wb
    m, bshape = w.shape[0], (w.shape[0],) + (1,) * (w.ndim - 1)
    # Step 2: the new weights (None: unchanged)
    if node.op_type == "BatchNormalization":
        params = _bn_params(graph, node)
        if params is None or params[0].shape != (m,):
            return False
        scale, bias, mean, var, eps = params
        s = scale / np.sqrt(var + eps)
        new_w, new_b = w * s.reshape(bshape), ((0.0 if b is None else b) - mean) * s + bias
    else:
        c = _channel_const(graph, node, conv.outputs[0], w.ndim, m, conv.outputs[0].dtype)
        if c is None:
            return False
        if node.op_type == "Mul":
            new_w, new_b = w * c.reshape(bshape), None if b is None else b * c
        else:
            new_w, new_b = None, c if b is None else b + c
    # Step 3: one Conv with the new constants
    old_b = conv.inputs[2] if len(conv.inputs) > 2 else None
    inputs = [conv.inputs[0], _const(graph, conv.inputs[1], new_w, conv.inputs[1].name),
              _const(graph, old_b, new_b, f"{conv.name}_B", conv.inputs[1].dtype)]
    replace_pattern(graph, [conv, node], "Conv", inputs if inputs[2] is not None else inputs[:2],
                    conv.attrs, name=conv.name)
    return True


def _fold_into_batchnorm(graph, bn, node) -> bool:
    # Step 1: match BN -> Mul / Add with a per-channel constant
    x = bn.inputs[0]
    params = _bn_params(graph, bn)
    if params is None or x.shape is None or not only_reader(graph, bn.outputs[0], node):
        return False
    scale, bias = params[0], params[1]
    c = _channel_const(graph, node, bn.outputs[0], len(x.shape), len(scale), bn.outputs[0].dtype)
    if c is None:
        return False
    # Step 2: the new scale and bias (None: unchanged)
    new_scale, new_bias = (scale * c, bias * c) if node.op_type == "Mul" else (None, bias + c)
    # Step 3: one BatchNormalization with the new constants
    s, b = bn.inputs[1], bn.inputs[2]
    inputs = [x, _const(graph, s, new_scale, s.name), _const(graph, b, new_bias, b.name), *bn.inputs[3:]]
    replace_pattern(graph, [bn, node], "BatchNormalization", inputs, bn.attrs, name=bn.name)
    return True


def _const(graph, old, array, name, dtype=None):
    """`old` when `array` is None (unchanged), else a new constant named after `name`, in old's dtype."""
    if array is None:
        return old
    return graph.add_const(_folded(name), array.astype(old.dtype if old is not None else dtype))


def fold_batchnorm(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        if node.domain != "" or node.op_type not in ("BatchNormalization", "Mul", "Add"):
            continue
        x = node.inputs[0]
        if node.op_type != "BatchNormalization" and len(node.inputs) == 2 and node.inputs[0].is_const:
            x = node.inputs[1]
        conv = producer(x, ("Conv",))
        if conv is not None and len(conv.outputs) == 1:
            changed |= _fold_into_conv(graph, conv, node)
            continue
        bn = producer(x, ("BatchNormalization",))
        if bn is not None and node.op_type != "BatchNormalization":
            changed |= _fold_into_batchnorm(graph, bn, node)
    return changed

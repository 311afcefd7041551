"""fold_pad: a zero Pad of the spatial axes before a Conv (or a MaxPool over a map >= 0) becomes its pads.

Keras's ZeroPadding2D (before MobileNetV2's and ResNet's stride-2 'valid' convs, before DenseNet's and
ResNet's stem MaxPool; exported by tf2onnx) and torch's F.pad before a conv leave

    Pad(x, pads=[0, 0, t, l, 0, 0, b, r], constant 0) -> Conv(auto_pad VALID or pads p)
        == Conv(x, pads = p + [t, l, b, r])
    Pad(Relu(.) or Clip(., min >= 0), zeros) -> MaxPool  == MaxPool(pads = p + [t, l, b, r])
        (a MaxPool's pads are ignored, not zeros: the same max only where every window keeps one element
        of a map that is never below zero)

The Pad writes a whole padded copy of the feature map (MobileNetV2's first stride-2 block: 96 x 113 x 113)
which the conv then reads again; the conv's kernels pad their edges without that copy. One thread, CPU time,
alternating with the pass off (2026-12-08, load 10-20): ge.models.mobilenet_v2_keras_block 1.63 -> 1.35 ms,
the Keras fixtures (tests/tf/fixtures) MobileNetV2 0.86-1.01x (4 Pads), ResNet50 0.81-0.84x (stem conv and pool).

Algorithm, one sweep over the Convs and MaxPools:
  Step 1: match. The Conv's input is made by a Pad in "constant" mode whose pads are constant, non-negative,
          zero on the batch and channel axes, and whose value is +0.0 (or absent); the Conv's auto_pad is
          NOTSET or VALID (SAME_* derives its pads from the padded size). A MaxPool besides: its input
          padded a Relu's or a Clip's (constant min >= 0), no dilations, ceil_mode 0, no Indices read, and
          each side's pads at most the window - 1 (every window keeps an element of the map).
          The Pad may sit before a Transpose only the node reads (ge's TensorFlow frontend pads a Keras
          model's NHWC input, then transposes it): its pads are permuted to the Transpose's output axes.
  Step 2: the node reads the Pad's input, its pads grown by the Pad's (auto_pad VALID becomes explicit);
          a Transpose between them transposes the Pad's input instead.
  Step 3: the Pad goes when nobody reads it any more (another reader keeps it).

Limits: reflect/edge/wrap pads, negative pads (crops), pads given per `axes` (opset 18) and an AveragePool
(it may not count pads) and a MaxPool over a map that may be negative stay as they are.
Invariant: the node's output shape and values are unchanged (a conv's padding is zeros too).
"""
from __future__ import annotations

import numpy as np

from .pattern import const_of, only_reader, producer


def _pad_amounts(graph, pad, rank: int) -> list[int] | None:
    """The Pad's [begin..., end...] over all `rank` axes when it is a plain zero pad (not a crop), else None."""
    if pad.attrs.get("mode", "constant") != "constant":
        return None
    if graph.opset < 11:
        pads, value = pad.attrs.get("pads", pad.attrs.get("paddings")), float(pad.attrs.get("value", 0.0))
    else:
        if len(pad.inputs) > 3 and pad.inputs[3] is not None:
            return None
        pads = const_of(pad.inputs[1])
        v = const_of(pad.inputs[2]) if len(pad.inputs) > 2 and pad.inputs[2] is not None else np.zeros(1)
        if pads is None or v is None or v.size > 1:
            return None
        value = float(v.reshape(-1)[0]) if v.size else 0.0
    if value != 0.0 or np.signbit(value) or pads is None or len(pads) != 2 * rank:
        return None
    pads = [int(p) for p in np.asarray(pads).reshape(-1)]
    return pads if min(pads) >= 0 else None


def _never_negative(graph, v) -> bool:
    """v is made by a Relu, or a Clip whose min is a constant >= 0."""
    p = producer(v, ("Relu", "Clip"))
    if p is None or p.op_type == "Relu":
        return p is not None
    lo = p.attrs.get("min") if graph.opset < 11 else const_of(p.inputs[1]) if len(p.inputs) > 1 else None
    return lo is not None and np.size(lo) == 1 and float(np.asarray(lo).reshape(-1)[0]) >= 0.0


def _pool_keeps_max(graph, pool, pad, pads: list[int]) -> bool:
    """Folding a zero Pad into this MaxPool keeps its values (see the header)."""
    nd, k = len(pads) // 2, [int(w) for w in pool.attrs.get("kernel_shape", [])]
    if len(k) != nd or any(int(d) != 1 for d in pool.attrs.get("dilations", [1] * nd)):
        return False
    if pool.attrs.get("ceil_mode", 0) or any(v.users or v in graph.outputs for v in pool.outputs[1:]):
        return False
    return _never_negative(graph, pad.inputs[0]) and all(p <= k[i % nd] - 1 for i, p in enumerate(pads))


def _padded(graph, node):
    """(the Pad, the Transpose between it and `node` or None) when node's input is a Pad's output, or a
    Transpose's that only node reads of a Pad's that only the Transpose reads."""
    x = node.inputs[0]
    t = producer(x, ("Transpose",))
    if t is None:
        return producer(x, ("Pad",)), None
    pad = producer(t.inputs[0], ("Pad",))
    if pad is None or "perm" not in t.attrs or pad.inputs[0].shape is None:
        return None, None
    ok = only_reader(graph, x, node) and only_reader(graph, pad.outputs[0], t)
    return (pad, t) if ok else (None, None)


def _fold(graph, node) -> bool:
    # Step 1: match Pad -> Conv / MaxPool (or Pad -> Transpose -> them: an input padded before its Transpose)
    x = node.inputs[0]
    pad, t = _padded(graph, node)
    auto = node.attrs.get("auto_pad", "NOTSET")
    if pad is None or x.shape is None or auto not in ("NOTSET", "VALID"):
        return False
    rank = len(x.shape)
    nd = rank - 2
    amounts = _pad_amounts(graph, pad, rank)
    if amounts is None or nd < 1:
        return False
    if t is not None:   # the pads over the Transpose's output axes
        perm = [int(p) for p in t.attrs["perm"]]
        amounts = [amounts[p] for p in perm] + [amounts[rank + p] for p in perm]
    if amounts[0] or amounts[1] or amounts[rank] or amounts[rank + 1]:   # the batch or channel axis
        return False
    own = [0] * (2 * nd) if auto == "VALID" else [int(p) for p in node.attrs.get("pads", [0] * (2 * nd))]
    spatial = amounts[2:rank] + amounts[rank + 2:]
    pads = [a + b for a, b in zip(own, spatial)]
    if len(own) != 2 * nd or (node.op_type == "MaxPool" and not _pool_keeps_max(graph, node, pad, pads)):
        return False
    # Step 2: the node reads the unpadded map with its pads grown
    node.attrs.pop("auto_pad", None)
    node.attrs["pads"] = pads
    if t is None:
        graph.set_input(node, 0, pad.inputs[0])
    else:   # the Transpose moves above the Pad: it transposes the unpadded map
        graph.set_input(t, 0, pad.inputs[0])
        t.outputs[0].shape = tuple(pad.inputs[0].shape[p] for p in perm)
    # Step 3: the Pad goes with its last reader
    if not pad.outputs[0].users and pad.outputs[0] not in graph.outputs:
        graph.erase_node(pad)
    return True


def fold_pad(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        if node.domain == "" and node.op_type in ("Conv", "MaxPool") and node.inputs and node.inputs[0] is not None:
            changed |= _fold(graph, node)
    return changed

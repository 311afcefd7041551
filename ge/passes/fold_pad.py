"""fold_pad: a zero Pad of the spatial axes before a Conv becomes the Conv's own pads.

Keras's ZeroPadding2D (before MobileNetV2's and ResNet's stride-2 'valid' convs, exported by tf2onnx) and
torch's F.pad before a conv leave

    Pad(x, pads=[0, 0, t, l, 0, 0, b, r], constant 0) -> Conv(auto_pad VALID or pads p)
        == Conv(x, pads = p + [t, l, b, r])

The Pad writes a whole padded copy of the feature map (MobileNetV2's first stride-2 block: 96 x 113 x 113)
which the conv then reads again; the conv's kernels pad their edges without that copy.

Algorithm, one sweep over the Convs:
  Step 1: match. The Conv's input is made by a Pad in "constant" mode whose pads are constant, non-negative,
          zero on the batch and channel axes, and whose value is +0.0 (or absent); the Conv's auto_pad is
          NOTSET or VALID (SAME_* derives its pads from the padded size).
  Step 2: the Conv reads the Pad's input, its pads grown by the Pad's (auto_pad VALID becomes explicit).
  Step 3: the Pad goes when nobody reads it any more (another reader keeps it).

Limits: reflect/edge/wrap pads, negative pads (crops), pads given per `axes` (opset 18) and pads before
pools (a MaxPool pads with -inf, an AveragePool may not count pads) stay as they are.
Invariant: the Conv's output shape and values are unchanged (the kernels' padding is zeros too).
"""
from __future__ import annotations

import numpy as np

from .pattern import const_of, producer


def _pad_amounts(graph, pad, rank: int) -> list[int] | None:
    """The Pad's [begin..., end...] over all `rank` axes when it is a plain zero pad, else None."""
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
    if min(pads) < 0 or pads[0] or pads[1] or pads[rank] or pads[rank + 1]:
        return None
    return pads


def _fold(graph, conv) -> bool:
    # Step 1: match Pad -> Conv
    x = conv.inputs[0]
    pad = producer(x, ("Pad",))
    auto = conv.attrs.get("auto_pad", "NOTSET")
    if pad is None or x.shape is None or auto not in ("NOTSET", "VALID"):
        return False
    rank = len(x.shape)
    nd = rank - 2
    amounts = _pad_amounts(graph, pad, rank)
    if amounts is None or nd < 1:
        return False
    own = [0] * (2 * nd) if auto == "VALID" else [int(p) for p in conv.attrs.get("pads", [0] * (2 * nd))]
    if len(own) != 2 * nd:
        return False
    # Step 2: the Conv reads the unpadded map with its pads grown
    spatial = amounts[2:rank] + amounts[rank + 2:]
    conv.attrs.pop("auto_pad", None)
    conv.attrs["pads"] = [a + b for a, b in zip(own, spatial)]
    graph.set_input(conv, 0, pad.inputs[0])
    # Step 3: the Pad goes with its last reader
    if not pad.outputs[0].users and pad.outputs[0] not in graph.outputs:
        graph.erase_node(pad)
    return True


def fold_pad(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        if node.domain == "" and node.op_type == "Conv" and node.inputs and node.inputs[0] is not None:
            changed |= _fold(graph, node)
    return changed

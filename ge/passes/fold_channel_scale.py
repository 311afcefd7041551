"""fold_channel_scale: a per-channel scale of a conv's input moves into the conv (ge::ScaledConv), which
scales its weight columns per run instead of the whole feature map.

    Mul(h, s) -> Conv / FusedConv(., W, B[, Z])   ->   ge::ScaledConv[conv's attrs](h, W, B, Z, s)
    s: [1, C, 1, 1] (or [C, 1, 1]), one factor per channel of h [N, C, H, W]: squeeze-excitation's gate

Squeeze-excitation (EfficientNet's MBConv, MobileNetV3) scales the map by a per-channel gate computed at
run time, then projects it with a 1x1 conv; conv(h * s, W) = conv(h, W * s) with s on W's input-channel
axis (zero padding scales to zero), so the Mul's pass over the map (read and write N x C x H x W) becomes
M x C x k multiplies on the weights (conv_scaled.py, with what it measured).

Algorithm, one sweep in order:
  Step 1: match a Mul of a float32 static map h [N, C, H, W] by a per-channel s (either operand order) whose
          only reader is a Conv or an unpacked FusedConv as its input x (not its residual Z), with constant
          float32 weights [M, C, kh, kw], group 1, and one pack_conv_weights would not pack (so IMPLICIT's
          convs keep their packed weights; ScaledConv runs conv.py's lowered modes).
  Step 2: replace the Mul and the conv by one ScaledConv with the conv's inputs (absent B, Z as None), s
          last, and the conv's attributes (activation, residual and all).
Runs in the LOWERING before pack_conv_weights, once fuse_activation has given the conv its epilogue.
Limits: 2-D convs, group 1; a scale with a batch dimension (per image) stays a Mul.
Invariant: outputs equal up to float rounding ((W*s)*h instead of W*(s*h)); no graph output is renamed.
"""
from __future__ import annotations

import numpy as np

from ..kernels.registry import is_registered
from .pack_conv_weights import packable
from .pattern import only_reader, replace_pattern


def _per_channel(s, h) -> bool:
    return (s.is_static and h.is_static and len(h.shape) == 4 and s.dtype == np.float32
            and tuple(s.shape) in ((1, h.shape[1], 1, 1), (h.shape[1], 1, 1)))


def _match(graph, mul):
    """(h, s, conv) when `mul` scales a conv's input per channel as Step 1 says, else None."""
    if mul.op_type != "Mul" or mul.domain != "" or len(mul.inputs) != 2 or None in mul.inputs:
        return None
    y = mul.outputs[0]
    if len(y.users) != 1:
        return None
    conv = y.users[0]
    if (conv.op_type, conv.domain) not in (("Conv", ""), ("FusedConv", "ge")) or "weight_shape" in conv.attrs:
        return None
    if not only_reader(graph, y, conv) or conv.inputs[0] is not y or int(conv.attrs.get("group", 1)) != 1:
        return None
    w = conv.inputs[1] if len(conv.inputs) > 1 else None
    if w is None or w.const is None or w.const.dtype != np.float32 or w.const.ndim != 4 or packable(conv):
        return None
    for h, s in ((mul.inputs[0], mul.inputs[1]), (mul.inputs[1], mul.inputs[0])):
        if h.dtype == np.float32 and y.shape == h.shape and _per_channel(s, h) and w.const.shape[1] == h.shape[1]:
            return h, s, conv
    return None


def fold_channel_scale(graph) -> bool:
    if not is_registered("ScaledConv", "ge"):
        return False
    changed = False
    for mul in list(graph.nodes):
        if mul not in graph.nodes:
            continue
        # Step 1: match
        found = _match(graph, mul)
        if found is None:
            continue
        h, s, conv = found
        # Step 2: one ScaledConv
        inputs = [h] + list(conv.inputs[1:4]) + [None] * (4 - len(conv.inputs)) + [s]
        graph.opsets.setdefault("ge", 1)
        replace_pattern(graph, [mul, conv], "ScaledConv", inputs, dict(conv.attrs), "ge", name=conv.name)
        changed = True
    return changed

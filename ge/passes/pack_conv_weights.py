"""pack_conv_weights: constant conv weights stored once in the layout the IMPLICIT conv kernel reads (GE's
weight-format transformation, as ATC turns Conv2D weights into FRACTAL_Z for the Cube unit).

    Conv(x, W[M, Cg, kh, kw], B)            -> ge::FusedConv[weight_shape=[M, Cg, kh, kw]](x, Wp, B)
    ge::FusedConv[...](x, W, B, Z)          -> ge::FusedConv[..., weight_shape=...](x, Wp, B, Z)

Wp = conv_implicit.pack(W, group): per group, panels of two vectors of output channels, each [K, width]
with K = Cg*kh*kw. Without it every IMPLICIT block would pack its group again on every run (ResNet-50's
convs: 123 ms with packing per run, 81 ms packed once, onnxruntime 77 ms, one core each).

Algorithm, one sweep in order:
  Step 1: match a Conv or an unpacked FusedConv whose W is a float constant of a conv IMPLICIT suits
          (conv.wants_packed: 1-D or 2-D, not depthwise, a panel of output channels a group or more; a
          vector or more when x is a float32 Cast of a 16-bit value: only IMPLICIT reads 16-bit maps).
  Step 2: a new constant with the packed weights (the old one goes when nothing else reads it).
  Step 3: the node becomes a FusedConv with the same inputs, attributes and output, and `weight_shape`.
Limits: weights computed at run time, 3-D convs, ConvTranspose and conv.USE_IMPLICIT = False stay as they
are. Invariant: outputs keep their bits (IMPLICIT computes the same FMA chains packed or not).
"""
from __future__ import annotations

from ..kernels import conv
from ..kernels.conv_implicit import pack
from ..ir.dtypes import is_half
from .pattern import producer, replace_pattern


def _packable(node) -> bool:
    if (node.op_type, node.domain) not in (("Conv", ""), ("FusedConv", "ge")) or "weight_shape" in node.attrs:
        return False
    w = node.inputs[1] if len(node.inputs) > 1 else None
    x = node.inputs[0]
    if w is None or w.const is None or (x.dtype is not None and x.dtype != w.const.dtype):
        return False
    cast = producer(x, ("Cast",))
    half = cast is not None and is_half(cast.inputs[0].dtype)  # a 16-bit feature map: conv_half.py
    return conv.wants_packed(w.const.shape, int(node.attrs.get("group", 1)), w.const.dtype, half)


def pack_conv_weights(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        # Step 1: match
        if not _packable(node):
            continue
        # Step 2: the packed constant
        w = node.inputs[1]
        packed = graph.add_const(graph.fresh_name(f"{w.name}_packed"), pack(w.const, int(node.attrs.get("group", 1))))
        # Step 3: the FusedConv reading it
        graph.opsets.setdefault("ge", 1)
        inputs = [node.inputs[0], packed] + list(node.inputs[2:])
        replace_pattern(graph, [node], "FusedConv", inputs, {**node.attrs, "weight_shape": list(w.const.shape)}, "ge",
                        name=node.name)
        changed = True
    return changed

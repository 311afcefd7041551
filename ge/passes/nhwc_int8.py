"""nhwc_int8: a QDQ model's int8 feature maps stay in the VNNI conv's layout between integer ops (GE's
TransData at the edges of a region of one format), so no conv repacks its input or scatters its output.

    y = ge::QLinearConv[weight_shape](x, ...)              (packed: pack_qconv_weights)
 -> y_nhwc = ge::QLinearConv[x_layout=NHWC?, y_layout=NHWC](x_nhwc | x, ...)
    y = ge::QLinearConv[group=C](x, ...)                    (depthwise: kernels/conv_depthwise_int8.py)
 -> y_nhwc = ge::QLinearConv[group=C, x_layout=NHWC, y_layout=NHWC](x_nhwc, ...)
    y = ge::TransData[src_format=NHWC, dst_format=NCHW](y_nhwc)      for the readers outside the region

An NHWC value is a byte image [N, H, W, C4] (kernels/qnhwc.py: channels rounded up to 4, int8 shifted to
uint8). Between the convs, fuse_qdq leaves float islands DQ -> op -> Q; those of the shapes below become
int8 ops on images, with the same bits (qnhwc.py says why):
    DQ(x) -> MaxPool -> Q                      -> ge::QMaxPool(x, [table])
    DQ(x_0) .. DQ(x_k) -> Concat(axis 1) -> Q  -> ge::QConcat(x_0 .. x_k, tables)   (each C_i % 4 == 0)
    DQ(a), DQ(b) -> Add | Sum [-> Relu] -> Q   -> ge::QAdd[relu](a, .., b, .., ys, yzp)

Algorithm:
  Step 1: match the candidate convs (packed, 4-D, both zero points present; or depthwise, which always
          join: their NCHW path is an int16 im2col GEMM) and the islands (per-tensor
          constant parameters, positive scales, intermediates read only inside the island, no graph
          output among them). An island joins the region when one of its inputs comes from a candidate or
          an island, or one of the candidates or islands reads its result.
  Step 2: in order, each region node is rebuilt on images: an input with an image is read as one (an
          island's other inputs get a TransData NCHW -> NHWC; a conv reads NCHW itself); a conv writes an
          image when a region node reads its result, an island always. The old result keeps its name,
          now made by a TransData NHWC -> NCHW from the image, for the readers outside the region and the
          graph outputs; eliminate_dead_code drops the TransDatas and DequantizeLinears left unread.
Limits: 2-D convs and pools, batch any; MaxPool without dilations, ceil_mode or indices. Runs in the
LOWERING after pack_qconv_weights.
Invariant: every value outside the region keeps its name, type, shape and bits.
"""
from __future__ import annotations

import numpy as np

from ..kernels.qnhwc import c4
from .pattern import only_reader, producer

_SHIFT = {np.dtype(np.int8): 128, np.dtype(np.uint8): 0}
_RANGE = {np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255)}


def _conv(node) -> bool:
    if (node.op_type, node.domain) != ("QLinearConv", "ge") or "weight_shape" not in node.attrs:
        return False
    x = node.inputs[0]
    return (len(node.inputs) > 7 and node.inputs[2] is not None and node.inputs[7] is not None
            and "x_layout" not in node.attrs and x.dtype in _SHIFT and x.is_static and len(x.shape) == 4)


def _depthwise(node) -> bool:
    """A depthwise ge::QLinearConv conv_depthwise_int8.py runs on images: 2-D, group = C = M, constant
    int8 weights without zero point, undilated, both activation zero points."""
    if (node.op_type, node.domain) != ("QLinearConv", "ge") or "weight_shape" in node.attrs or "x_layout" in node.attrs:
        return False
    if len(node.inputs) < 8 or node.inputs[2] is None or node.inputs[7] is None or node.inputs[5] is not None:
        return False
    x, w = node.inputs[0], node.inputs[3]
    if x.dtype not in _SHIFT or not x.is_static or len(x.shape) != 4 or w.const is None or w.dtype != np.int8:
        return False
    C = x.shape[1]
    return (node.attrs.get("group", 1) == C > 1 and w.const.shape[:2] == (C, 1) and len(w.const.shape) == 4
            and all(d == 1 for d in node.attrs.get("dilations", [1, 1])))


def _dq(v):
    """(the DQ node, its 8-bit 4-D input, scale, zero point) when v is a per-tensor constant DequantizeLinear."""
    p = producer(v, ("DequantizeLinear",))
    if p is None or len(p.inputs) < 3 or p.inputs[2] is None or p.attrs.get("block_size"):
        return None
    x, s, z = p.inputs
    if x.dtype not in _SHIFT or not x.is_static or len(x.shape) != 4 or s.const is None or z.const is None:
        return None
    if s.const.size != 1 or z.const.size != 1 or not float(s.const.reshape(-1)[0]) > 0:
        return None
    return p, x, s, z


def table(s, z, ys, yz) -> np.ndarray:
    """Q(DQ(v)) of every shifted byte, shifted, in quant.py's float32 steps."""
    dt, yt = z.dtype, yz.dtype
    q = np.arange(256, dtype=np.int32) - _SHIFT[dt]
    d = (q.astype(np.float32) - np.float32(z.reshape(-1)[0])) * np.float32(s.reshape(-1)[0])
    lo, hi = (np.float32(b) for b in _RANGE[yt])
    y = np.minimum(np.maximum(np.rint(d / np.float32(ys.reshape(-1)[0])) + np.float32(yz.reshape(-1)[0]), lo), hi)
    return (y.astype(np.int32) + _SHIFT[yt]).astype(np.uint8)


def _island(graph, q):
    """Step 1 for one QuantizeLinear: (op, attrs, [(dq, x, s, z)], pattern nodes) or None."""
    if len(q.inputs) < 3 or q.inputs[2] is None or q.inputs[2].dtype not in _SHIFT or q.attrs.get("block_size"):
        return None
    if q.inputs[1].const is None or q.inputs[2].const is None or q.inputs[1].const.size != 1:
        return None
    v, pattern, relu = q.inputs[0], [q], 0
    r = producer(v, ("Relu",))
    if r is not None and only_reader(graph, v, q):
        v, pattern, relu = r.inputs[0], [r, q], 1
    op = producer(v, ("MaxPool", "Concat", "Add", "Sum"))
    if op is None or not only_reader(graph, v, pattern[0]) or len(op.outputs) != 1:
        return None
    dqs = [_dq(x) for x in op.inputs]
    if not dqs or any(d is None for d in dqs) or any(not only_reader(graph, x, op) for x in op.inputs):
        return None
    if op.op_type == "MaxPool" and not relu:
        a = op.attrs
        if (a.get("ceil_mode", 0) or a.get("storage_order", 0) or any(d != 1 for d in a.get("dilations", [1, 1]))
                or a.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET") or len(a.get("kernel_shape", [])) != 2):
            return None
        attrs = {k: list(a[k]) for k in ("kernel_shape", "strides", "pads") if k in a}
        return "QMaxPool", attrs, dqs, [op] + pattern
    if op.op_type == "Concat" and not relu:
        if op.attrs.get("axis") not in (1, -3) or any(d[1].shape[1] % 4 for d in dqs):
            return None
        return "QConcat", {}, dqs, [op] + pattern
    if op.op_type in ("Add", "Sum") and len(dqs) == 2 and dqs[0][1].shape == dqs[1][1].shape:
        return "QAdd", {"relu": relu}, dqs, [op] + pattern
    return None


def _image_of(graph, v, images, before):
    """The image of 8-bit NCHW v: the region's, else a new TransData before node `before`."""
    if v not in images:
        N, C, H, W = v.shape
        t = graph.add_node("TransData", [v], [graph.fresh_name(f"{v.name}_nhwc")],
                           {"src_format": "NCHW", "dst_format": "NHWC", "shift": _SHIFT[v.dtype]},
                           graph.fresh_name(f"{v.name}_to_nhwc"), "ge", index=graph.nodes.index(before))
        t.outputs[0].dtype, t.outputs[0].shape = np.dtype(np.uint8), (N, H, W, c4(C))
        images[v] = t.outputs[0]
    return images[v]


def _rebuild(graph, old, pattern, op, inputs, attrs, image_shape, images):
    """Step 2: `op` on images in place of `pattern` (whose last node is `old`); old's result keeps its name
    as a TransData of the new image."""
    v = old.outputs[0]
    at = graph.nodes.index(old) + 1
    node = graph.add_node(op, inputs, [graph.fresh_name(f"{v.name}_nhwc")], attrs, pattern[0].name, "ge", index=at)
    img = node.outputs[0]
    img.dtype, img.shape = np.dtype(np.uint8), tuple(image_shape)
    back = {"src_format": "NHWC", "dst_format": "NCHW", "shift": _SHIFT[v.dtype], "channels": int(v.shape[1])}
    tmp = graph.add_node("TransData", [img], 1, back, graph.fresh_name(f"{v.name}_to_nchw"), "ge", index=at + 1)
    graph.replace_all_uses_with(v, tmp.outputs[0])
    name, dtype, shape = v.name, v.dtype, v.shape
    for n in sorted(pattern, key=graph.nodes.index, reverse=True):
        graph.erase_node(n)
    t = graph.add_node("TransData", [img], [name], back, tmp.name, "ge", index=graph.nodes.index(tmp))
    t.outputs[0].dtype, t.outputs[0].shape = dtype, shape
    graph.replace_all_uses_with(tmp.outputs[0], t.outputs[0])
    graph.erase_node(tmp)
    images[t.outputs[0]] = img


def nhwc_int8(graph) -> bool:
    # Step 1: candidates and islands
    convs = {n for n in graph.nodes if _conv(n)}
    dws = {n for n in graph.nodes if _depthwise(n)}
    islands = {}
    for q in [n for n in graph.nodes if n.op_type == "QuantizeLinear" and n.domain == ""]:
        m = _island(graph, q)
        if m is not None:
            islands[q] = m
    made_by = {n.outputs[0]: n for n in list(convs) + list(islands) + list(dws)}
    read_by = {}
    for c in convs | dws:
        read_by.setdefault(c.inputs[0], []).append(c)
    for q, (_, _, dqs, _) in islands.items():
        for d in dqs:
            read_by.setdefault(d[1], []).append(q)
    joined = {q for q, (_, _, dqs, _) in islands.items()
              if any(d[1] in made_by for d in dqs) or read_by.get(q.outputs[0])}
    region = convs | joined | dws
    if not region:
        return False
    graph.opsets.setdefault("ge", 1)
    # Step 2: rebuild in order
    images, changed = {}, False
    for n in list(graph.nodes):
        if n in convs:
            y = n.outputs[0]
            out_image = any(r in region for r in read_by.get(y, []))
            x_image = n.inputs[0] in images
            if not (out_image or x_image):
                continue
            attrs = {**n.attrs, "x_layout": "NHWC" if x_image else "NCHW", "y_layout": "NHWC"}
            inputs = [images[n.inputs[0]] if x_image else n.inputs[0]] + list(n.inputs[1:])
            N, _, OH, OW = y.shape
            if out_image:
                _rebuild(graph, n, [n], "QLinearConv", inputs, attrs, (N, OH, OW, c4(y.shape[1])), images)
            else:  # reads an image, writes NCHW for its readers outside the region
                attrs["y_layout"] = "NCHW"
                _replace_inputs(graph, n, inputs, attrs)
            changed = True
        elif n in dws:  # always on images: the int16 path it would take otherwise is ~10x slower
            N, M, OH, OW = n.outputs[0].shape
            inputs = [_image_of(graph, n.inputs[0], images, n)] + list(n.inputs[1:])
            attrs = {**n.attrs, "x_layout": "NHWC", "y_layout": "NHWC"}
            _rebuild(graph, n, [n], "QLinearConv", inputs, attrs, (N, OH, OW, c4(M)), images)
            changed = True
        elif n in joined:
            op, attrs, dqs, pattern = islands[n]
            dqs = [(d[0], d[0].inputs[0], d[2], d[3]) for d in dqs]  # inputs as they are now (rebuilt producers)
            xs = [_image_of(graph, d[1], images, pattern[0]) for d in dqs]
            N, _, H, W = dqs[0][1].shape
            q = n
            if op == "QMaxPool":
                t = table(dqs[0][2].const, dqs[0][3].const, q.inputs[1].const, q.inputs[2].const)
                lut = [] if np.array_equal(t, np.arange(256)) else [graph.add_const(f"{q.name}_table", t)]
                inputs = xs + lut
                C = dqs[0][1].shape[1]
                k, s = attrs["kernel_shape"], attrs.get("strides", [1, 1])
                p = attrs.get("pads", [0, 0, 0, 0])
                shape = (N, (H + p[0] + p[2] - k[0]) // s[0] + 1, (W + p[1] + p[3] - k[1]) // s[1] + 1, c4(C))
            elif op == "QConcat":
                ts = [table(d[2].const, d[3].const, q.inputs[1].const, q.inputs[2].const) for d in dqs]
                attrs = {"identity": [int(np.array_equal(t, np.arange(256))) for t in ts]}
                inputs = xs + [graph.add_const(f"{q.name}_tables", np.concatenate(ts))]
                shape = (N, H, W, sum(d[1].shape[1] for d in dqs))
            else:
                (_, _, sa, za), (_, _, sb, zb) = dqs
                inputs = [xs[0], sa, za, xs[1], sb, zb, q.inputs[1], q.inputs[2]]
                shape = (N, H, W, c4(dqs[0][1].shape[1]))
            _rebuild(graph, n, pattern, op, inputs, attrs, shape, images)
            changed = True
    return changed


def _replace_inputs(graph, node, inputs, attrs) -> None:
    for i, v in enumerate(inputs):
        if node.inputs[i] is not v:
            graph.set_input(node, i, v)
    node.attrs = attrs

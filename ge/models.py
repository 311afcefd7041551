"""Models built in the repo with onnx.helper, for tests and benchmarks of dynamic shapes.

- `bert_like(...)`: a small BERT-style encoder with a symbolic sequence length (and batch): word and
  position embeddings (Gather; positions from Shape -> Gather -> Range, so shape values flow at run time),
  LayerNormalization, multi-head attention from MatMul / Reshape / Transpose / Softmax, a Gelu written
  with Erf, and residual Adds. Random weights from a seed.
- the blocks modern networks are made of, at their real shapes, batch 1, random weights (BatchNorm folded
  into the convs, as exporters leave it after constant folding), for the per-core kernel work (issue #17):
  `mobilenet_v2_block` (and `mobilenet_v2_keras_block`: Keras's NHWC edges, Pad, ReLU6 as Clip),
  `mbconv_block` (EfficientNet: SiLU, squeeze-excitation), `mobilenet_v3_block` (HardSwish, HardSigmoid SE),
  `vit_block` (ViT-B: 197 tokens x 768), `convnext_block` (7x7 depthwise, LayerNorm over channels, GELU,
  1x1 as MatMul), `fire_block` (SqueezeNet). `BLOCKS` names them.
- `all_reduce_layers(...)`: an MLP whose every layer's activations are HcomAllReduce'd (like data-parallel
  gradients) and scaled, while the next layers compute on: the model GE's AllReduce-parallel pass
  (`ge.hcomParallel`) is for.
- `detector_like(...)`: a static ResNet-ish conv backbone with a box head (boxes [1, N, 4], scores
  [1, 1, N]) and NonMaxSuppression at the end, whose output count follows the data (issue 42's detector
  target: the backbone sinks, NMS stays host-driven). `backbone=True`: the same model without the NMS.
- `with_symbolic_dims(model, {input: {axis: name}})`: a copy of a model whose input dims are dim_params
  (e.g. a light model with a symbolic batch).
"""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _Builder:
    def __init__(self, seed: int):
        self.nodes, self.inits = [], []
        self.rng = np.random.default_rng(seed)
        self._n = 0

    def name(self, base: str) -> str:
        self._n += 1
        return f"{base}_{self._n}"

    def const(self, base: str, value) -> str:
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(value), n))
        return n

    def weight(self, base: str, shape, scale: float) -> str:
        return self.const(base, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def op(self, op_type: str, inputs, base: str | None = None, **attrs) -> str:
        out = self.name(base or op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def linear(self, x: str, d_in: int, d_out: int, base: str) -> str:
        w = self.weight(f"{base}_w", (d_in, d_out), 1 / math.sqrt(d_in))
        b = self.weight(f"{base}_b", (d_out,), 0.02)
        return self.op("Add", [self.op("MatMul", [x, w], base), b], f"{base}_bias")

    def gelu(self, h: str, base: str) -> str:
        """GELU written with Erf, as torch exports it: h * 0.5 * (1 + erf(h / sqrt 2))."""
        half, one = self.const("half", np.array(0.5, np.float32)), self.const("onef", np.array(1.0, np.float32))
        sqrt2 = self.const("sqrt2", np.array(math.sqrt(2.0), np.float32))
        erf = self.op("Erf", [self.op("Div", [h, sqrt2], f"{base}_div")], f"{base}_erf")
        return self.op("Mul", [self.op("Mul", [h, half], f"{base}_half"), self.op("Add", [erf, one], f"{base}_1p")],
                       base)

    def conv(self, x: str, c_in: int, c_out: int, k: int, base: str, stride: int = 1, group: int = 1) -> str:
        """A Conv with bias (BatchNorm folded in), 'same' padding."""
        w = self.weight(f"{base}_w", (c_out, c_in // group, k, k), math.sqrt(2.0 / (c_in // group * k * k)))
        b = self.weight(f"{base}_b", (c_out,), 0.1)
        return self.op("Conv", [x, w, b], base, kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride] * 2,
                       group=group)

    def silu(self, x: str, base: str) -> str:
        return self.op("Mul", [x, self.op("Sigmoid", [x], f"{base}_sigmoid")], base)

    def model(self, name: str, inputs: list, outputs: list, opset: int = 17) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="ge.models")
        model.ir_version = min(model.ir_version, 8)  # loadable by the onnxruntime of this environment
        onnx.checker.check_model(model)
        return model

    def layer_norm(self, x: str, hidden: int, base: str) -> str:
        g = self.const(f"{base}_gamma", (1 + 0.1 * self.rng.standard_normal(hidden)).astype(np.float32))
        b = self.weight(f"{base}_beta", (hidden,), 0.1)
        return self.op("LayerNormalization", [x, g, b], base, axis=-1, epsilon=1e-5)


def bert_like(layers: int = 2, hidden: int = 64, heads: int = 4, vocab: int = 1000, max_seq: int = 512,
              batch: int | str = "batch", seq: str = "seq", ffn: int | None = None, seed: int = 0,
              opset: int = 17) -> onnx.ModelProto:
    """A BERT-like encoder: input_ids int64 [batch, seq] -> last_hidden_state float32 [batch, seq, hidden]."""
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads})")
    ffn = ffn or 4 * hidden
    dh = hidden // heads
    b = _Builder(seed)
    # embeddings: word + position, positions = Range(0, Shape(ids)[1])
    word = b.weight("word_embeddings", (vocab, hidden), 0.5)
    pos_table = b.weight("position_embeddings", (max_seq, hidden), 0.5)
    seq_len = b.op("Gather", [b.op("Shape", ["input_ids"], "ids_shape"), b.const("one", np.array(1, np.int64))],
                   "seq_len", axis=0)
    positions = b.op("Range", [b.const("zero", np.array(0, np.int64)), seq_len,
                               b.const("step", np.array(1, np.int64))], "positions")
    x = b.op("Add", [b.op("Gather", [word, "input_ids"], "word_emb", axis=0),
                     b.op("Gather", [pos_table, positions], "pos_emb", axis=0)], "embeddings")
    x = b.layer_norm(x, hidden, "emb_ln")
    split_heads = b.const("split_heads", np.array([0, 0, heads, dh], np.int64))
    merge_heads = b.const("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = b.const("scale", np.array(1 / math.sqrt(dh), np.float32))
    for i in range(layers):
        p = f"l{i}"
        q, k, v = (b.op("Reshape", [b.linear(x, hidden, hidden, f"{p}_{n}"), split_heads], f"{p}_{n}_heads")
                   for n in "qkv")
        q = b.op("Transpose", [q], f"{p}_qt", perm=[0, 2, 1, 3])
        k = b.op("Transpose", [k], f"{p}_kt", perm=[0, 2, 3, 1])
        v = b.op("Transpose", [v], f"{p}_vt", perm=[0, 2, 1, 3])
        scores = b.op("Mul", [b.op("MatMul", [q, k], f"{p}_qk"), scale], f"{p}_scores")
        probs = b.op("Softmax", [scores], f"{p}_probs", axis=-1)
        ctx = b.op("Transpose", [b.op("MatMul", [probs, v], f"{p}_ctx")], f"{p}_ctx_t", perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, merge_heads], f"{p}_ctx_merged")
        x = b.layer_norm(b.op("Add", [x, b.linear(ctx, hidden, hidden, f"{p}_out")], f"{p}_res1"), hidden,
                         f"{p}_ln1")
        gelu = b.gelu(b.linear(x, hidden, ffn, f"{p}_ffn1"), f"{p}_gelu")
        x = b.layer_norm(b.op("Add", [x, b.linear(gelu, ffn, hidden, f"{p}_ffn2")], f"{p}_res2"), hidden,
                         f"{p}_ln2")
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    return b.model("bert_like", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq])],
                   [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [batch, seq, hidden])],
                   opset)


def detector_like(hw: int = 64, width: int = 16, blocks: int = 2, seed: int = 0, backbone: bool = False,
                  max_boxes: int = 50) -> onnx.ModelProto:
    """image float32 [1, 3, hw, hw] -> selected int64 [K, 3] (NonMaxSuppression's rows) and their boxes
    float32 [K, 4]; `backbone`: boxes [1, N, 4] and scores [1, 1, N] (N = (hw / 8)^2 anchors)."""
    b = _Builder(seed)
    x = b.op("Relu", [b.conv("image", 3, width, 3, "stem", stride=2)], "stem_relu")
    c = width
    for stage in range(3):   # stride 2 per stage after the first: hw / 8 at the end
        if stage:
            x = b.op("Relu", [b.conv(x, c, 2 * c, 3, f"s{stage}_down", stride=2)], f"s{stage}_down_relu")
            c *= 2
        for k in range(blocks):   # a residual block: conv-relu-conv + x, relu
            p = f"s{stage}_b{k}"
            h = b.op("Relu", [b.conv(x, c, c, 3, f"{p}_c1")], f"{p}_r1")
            x = b.op("Relu", [b.op("Add", [x, b.conv(h, c, c, 3, f"{p}_c2")], f"{p}_add")], f"{p}_out")
    n = (hw // 8) ** 2
    head = b.conv(x, c, 5, 1, "head")                                     # [1, 5, hw/8, hw/8]
    flat = b.op("Reshape", [head, b.const("head_shape", np.array([1, 5, n], np.int64))], "head_flat")
    start = b.const("box_start", np.array([0], np.int64))
    box_end, axis1 = b.const("box_end", np.array([4], np.int64)), b.const("axis1", np.array([1], np.int64))
    deltas = b.op("Slice", [flat, start, box_end, axis1], "deltas")      # [1, 4, N]
    grid = (np.arange(n, dtype=np.float32) % (hw // 8)) * 8, (np.arange(n, dtype=np.float32) // (hw // 8)) * 8
    anchors = b.const("anchors", np.stack([grid[1], grid[0], grid[1] + 8, grid[0] + 8])[None].astype(np.float32))
    boxes = b.op("Transpose", [b.op("Add", [b.op("Mul", [deltas, b.const("box_scale", np.array(4.0, np.float32))],
                                                 "box_scaled"), anchors], "box_abs")], "boxes", perm=[0, 2, 1])
    scores = b.op("Sigmoid", [b.op("Slice", [flat, box_end, b.const("score_end", np.array([5], np.int64)), axis1],
                                   "logits")], "scores")             # [1, 1, N]
    f32 = TensorProto.FLOAT
    image = [helper.make_tensor_value_info("image", f32, [1, 3, hw, hw])]
    if backbone:
        b.nodes += [helper.make_node("Identity", [boxes], ["boxes_out"], name="boxes_out"),
                    helper.make_node("Identity", [scores], ["scores_out"], name="scores_out")]
        return b.model("detector_backbone", image, [helper.make_tensor_value_info("boxes_out", f32, [1, n, 4]),
                                                    helper.make_tensor_value_info("scores_out", f32, [1, 1, n])])
    sel = b.op("NonMaxSuppression", [boxes, scores, b.const("max_boxes", np.array([max_boxes], np.int64)),
                                     b.const("iou", np.array([0.5], np.float32)),
                                     b.const("score_min", np.array([0.3], np.float32))], "nms")
    idx = b.op("Gather", [sel, b.const("col2", np.array(2, np.int64))], "box_index", axis=1)   # [K]
    b.nodes += [helper.make_node("Identity", [sel], ["selected"], name="selected"),
                helper.make_node("Gather", [b.op("Squeeze", [boxes, b.const("axis0", np.array([0], np.int64))],
                                                 "boxes_2d"), idx], ["kept_boxes"], name="kept_boxes", axis=0)]
    return b.model("detector_like", image, [helper.make_tensor_value_info("selected", TensorProto.INT64, ["K", 3]),
                                            helper.make_tensor_value_info("kept_boxes", f32, ["K", 4])])


def _image_block(name: str, b: _Builder, y: str, c_in: int, hw: int, c_out: int, hw_out: int | None = None):
    b.nodes.append(helper.make_node("Identity", [y], ["y"], name="output"))
    return b.model(name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c_in, hw, hw])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c_out, hw_out or hw, hw_out or hw])])


def mobilenet_v2_block(channels: int = 24, hw: int = 56, expand: int = 6, seed: int = 0) -> onnx.ModelProto:
    """MobileNetV2's inverted residual: 1x1 expand, ReLU6, 3x3 depthwise, ReLU6, 1x1 project, residual."""
    b, c = _Builder(seed), channels * expand
    relu6 = {"min": b.const("zero", np.array(0, np.float32)), "max": b.const("six", np.array(6, np.float32))}
    h = b.op("Clip", [b.conv("x", channels, c, 1, "expand"), relu6["min"], relu6["max"]], "expand_relu6")
    h = b.op("Clip", [b.conv(h, c, c, 3, "dw", group=c), relu6["min"], relu6["max"]], "dw_relu6")
    y = b.op("Add", [b.conv(h, c, channels, 1, "project"), "x"], "residual")
    return _image_block("mobilenet_v2_block", b, y, channels, hw, channels)


def mobilenet_v2_keras_block(c_in: int = 16, hw: int = 112, c_out: int = 24, expand: int = 6,
                             seed: int = 0) -> onnx.ModelProto:
    """MobileNetV2's stride-2 inverted residual as Keras exports it (tf2onnx): NHWC in and out with
    Transposes at the edges, ReLU6 as Clip, and ZeroPadding2D's Pad (bottom and right only) before a
    'valid' 3x3/2 depthwise conv. x [1, hw, hw, c_in] -> y [1, hw/2, hw/2, c_out]."""
    b, c = _Builder(seed), c_in * expand
    lo, hi = b.const("zero", np.array(0, np.float32)), b.const("six", np.array(6, np.float32))
    h = b.op("Transpose", ["x"], "to_nchw", perm=[0, 3, 1, 2])
    h = b.op("Clip", [b.conv(h, c_in, c, 1, "expand"), lo, hi], "expand_relu6")
    h = b.op("Pad", [h, b.const("pads", np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64))], "zero_pad")
    w = b.weight("dw_w", (c, 1, 3, 3), math.sqrt(2.0 / 9))
    h = b.op("Conv", [h, w, b.weight("dw_b", (c,), 0.1)], "dw", kernel_shape=[3, 3], strides=[2, 2], group=c)
    h = b.op("Clip", [h, lo, hi], "dw_relu6")
    y = b.op("Transpose", [b.conv(h, c, c_out, 1, "project")], "to_nhwc", perm=[0, 2, 3, 1])
    b.nodes.append(helper.make_node("Identity", [y], ["y"], name="output"))
    f32, half = TensorProto.FLOAT, hw // 2
    return b.model("mobilenet_v2_keras_block", [helper.make_tensor_value_info("x", f32, [1, hw, hw, c_in])],
                   [helper.make_tensor_value_info("y", f32, [1, half, half, c_out])])


def _squeeze_excite(b: _Builder, h: str, c: int, squeeze: int, act, gate: str) -> str:
    """Squeeze-excitation: GlobalAveragePool -> 1x1 conv -> act -> 1x1 conv -> gate -> scale the map."""
    s = act(b.conv(b.op("GlobalAveragePool", [h], "se_pool"), c, squeeze, 1, "se_reduce"), "se_act")
    s = b.op(gate, [b.conv(s, squeeze, c, 1, "se_expand")], "se_gate")
    return b.op("Mul", [h, s], "se_scale")


def mbconv_block(channels: int = 40, hw: int = 28, expand: int = 6, k: int = 5, seed: int = 0) -> onnx.ModelProto:
    """EfficientNet's MBConv: 1x1 expand, SiLU, kxk depthwise, SiLU, squeeze-excitation (a quarter of the
    input channels, Sigmoid gate), 1x1 project, residual."""
    b, c = _Builder(seed), channels * expand
    h = b.silu(b.conv("x", channels, c, 1, "expand"), "expand_silu")
    h = b.silu(b.conv(h, c, c, k, "dw", group=c), "dw_silu")
    h = _squeeze_excite(b, h, c, max(1, channels // 4), b.silu, "Sigmoid")
    y = b.op("Add", [b.conv(h, c, channels, 1, "project"), "x"], "residual")
    return _image_block("mbconv_block", b, y, channels, hw, channels)


def mobilenet_v3_block(channels: int = 40, hw: int = 28, expand: int = 3, k: int = 5,
                       seed: int = 0) -> onnx.ModelProto:
    """MobileNetV3's bneck: 1x1 expand, HardSwish, kxk depthwise, HardSwish, SE with ReLU and a HardSigmoid
    gate (a quarter of the expanded channels), 1x1 project, residual."""
    b, c = _Builder(seed), channels * expand
    h = b.op("HardSwish", [b.conv("x", channels, c, 1, "expand")], "expand_hswish")
    h = b.op("HardSwish", [b.conv(h, c, c, k, "dw", group=c)], "dw_hswish")
    h = _squeeze_excite(b, h, c, c // 4, lambda x, n: b.op("Relu", [x], n), "HardSigmoid")
    y = b.op("Add", [b.conv(h, c, channels, 1, "project"), "x"], "residual")
    return _image_block("mobilenet_v3_block", b, y, channels, hw, channels)


def fire_block(c_in: int = 128, hw: int = 55, squeeze: int = 16, expand: int = 64, seed: int = 0) -> onnx.ModelProto:
    """SqueezeNet's fire module: 1x1 squeeze, ReLU, then 1x1 and 3x3 expands, ReLU each, concatenated."""
    b = _Builder(seed)
    s = b.op("Relu", [b.conv("x", c_in, squeeze, 1, "squeeze")], "squeeze_relu")
    e1 = b.op("Relu", [b.conv(s, squeeze, expand, 1, "expand1x1")], "expand1x1_relu")
    e3 = b.op("Relu", [b.conv(s, squeeze, expand, 3, "expand3x3")], "expand3x3_relu")
    return _image_block("fire_block", b, b.op("Concat", [e1, e3], "concat", axis=1), c_in, hw, 2 * expand)


def vit_block(tokens: int = 197, hidden: int = 768, heads: int = 12, mlp: int = 3072,
              seed: int = 0) -> onnx.ModelProto:
    """A ViT-B encoder block as torch exports it: LayerNorm, one QKV MatMul, heads split by Reshape /
    Transpose, batched Q K^T and softmax(.) V, the output projection, residual; LayerNorm, MLP with GELU
    (Erf), residual. x [1, tokens, hidden] -> y [1, tokens, hidden]."""
    b, dh = _Builder(seed), hidden // heads
    h = b.layer_norm("x", hidden, "ln1")
    qkv = b.op("Reshape", [b.linear(h, hidden, 3 * hidden, "qkv"),
                           b.const("qkv_shape", np.array([1, tokens, 3, heads, dh], np.int64))], "qkv_heads")
    qkv = b.op("Transpose", [qkv], "qkv_t", perm=[2, 0, 3, 1, 4])   # [3, 1, heads, tokens, dh]
    q, k, v = (b.op("Gather", [qkv, b.const(f"i{i}", np.array(i, np.int64))], n, axis=0)
               for i, n in enumerate("qkv"))
    kt = b.op("Transpose", [k], "k_t", perm=[0, 1, 3, 2])
    scores = b.op("Mul", [b.op("MatMul", [q, kt], "qk"), b.const("scale", np.array(dh ** -0.5, np.float32))],
                  "scores")
    ctx = b.op("MatMul", [b.op("Softmax", [scores], "probs", axis=-1), v], "ctx")
    ctx = b.op("Reshape", [b.op("Transpose", [ctx], "ctx_t", perm=[0, 2, 1, 3]),
                           b.const("merge", np.array([1, tokens, hidden], np.int64))], "ctx_merged")
    x = b.op("Add", ["x", b.linear(ctx, hidden, hidden, "proj")], "res1")
    h = b.gelu(b.linear(b.layer_norm(x, hidden, "ln2"), hidden, mlp, "fc1"), "gelu")
    y = b.op("Add", [x, b.linear(h, mlp, hidden, "fc2")], "res2")
    b.nodes.append(helper.make_node("Identity", [y], ["y"], name="output"))
    spec = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, tokens, hidden]) for n in "xy"]
    return b.model("vit_block", spec[:1], spec[1:])


def convnext_block(channels: int = 96, hw: int = 56, seed: int = 0) -> onnx.ModelProto:
    """ConvNeXt's block as torch exports it: 7x7 depthwise, to NHWC, LayerNorm over channels, 1x1 up (4x)
    as MatMul, GELU (Erf), 1x1 down as MatMul, layer scale, to NCHW, residual."""
    b = _Builder(seed)
    h = b.op("Transpose", [b.conv("x", channels, channels, 7, "dw", group=channels)], "nhwc", perm=[0, 2, 3, 1])
    h = b.gelu(b.linear(b.layer_norm(h, channels, "ln"), channels, 4 * channels, "pw1"), "gelu")
    h = b.op("Mul", [b.linear(h, 4 * channels, channels, "pw2"), b.weight("gamma", (channels,), 0.1)], "scale")
    y = b.op("Add", ["x", b.op("Transpose", [h], "nchw", perm=[0, 3, 1, 2])], "residual")
    return _image_block("convnext_block", b, y, channels, hw, channels)


BLOCKS = {"mobilenet_v2_block": mobilenet_v2_block, "mobilenet_v2_keras_block": mobilenet_v2_keras_block,
          "mbconv_block": mbconv_block,
          "mobilenet_v3_block": mobilenet_v3_block, "fire_block": fire_block, "vit_block": vit_block,
          "convnext_block": convnext_block}


def all_reduce_layers(layers: int = 4, batch: int = 8, width: int = 256, seed: int = 0,
                      fusion: int = 0) -> onnx.ModelProto:
    """x float32 [batch, width] -> Relu(MatMul) `layers` times -> `y`; each layer's output is also
    HcomAllReduce'd (sum, `fusion` (2: fusion_id 0), domain "ge") and halved into output `g<i>`. The
    AllReduces need nothing of the later layers, so with hcom_parallel they overlap them; with fusion 1 or
    2 they are fused into one (passes/fuse_collectives.py)."""
    b = _Builder(seed)
    h, outs = "x", []
    half = b.const("half", np.array(0.5, np.float32))
    for i in range(layers):
        h = b.op("Relu", [b.op("MatMul", [h, b.weight(f"w{i}", (width, width), 1 / math.sqrt(width))], f"fc{i}")],
                 f"relu{i}")
        red = b.name(f"allreduce{i}")
        b.nodes.append(helper.make_node("HcomAllReduce", [h], [red], name=red, domain="ge", reduction="sum",
                                        group="hccl_world_group", fusion=fusion,
                                        **({"fusion_id": 0} if fusion == 2 else {})))
        b.nodes.append(helper.make_node("Mul", [red, half], [f"g{i}"], name=f"g{i}"))
        outs.append(f"g{i}")
    b.nodes.append(helper.make_node("Identity", [h], ["y"], name="y"))
    info = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [batch, width])  # noqa: E731
    graph = helper.make_graph(b.nodes, "all_reduce_layers", [info("x")], [info("y")] + [info(o) for o in outs],
                              b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ge", 1)],
                              producer_name="ge.models")
    model.ir_version = min(model.ir_version, 8)
    onnx.checker.check_model(model)
    return model


def with_symbolic_dims(model: onnx.ModelProto | str, dims: dict[str, dict[int, str]]) -> onnx.ModelProto:
    """A copy of `model` whose listed input dims are symbolic: {"data_0": {0: "N"}}. Dims of outputs
    and value_info that had the same fixed size on those axes are not touched (shape inference redoes them)."""
    m = onnx.load(model) if isinstance(model, str) else onnx.ModelProto.FromString(model.SerializeToString())
    for inp in m.graph.input:
        for axis, name in dims.get(inp.name, {}).items():
            d = inp.type.tensor_type.shape.dim[axis]
            d.Clear()
            d.dim_param = name
    for out in m.graph.output:  # outputs re-inferred by ge
        if out.type.tensor_type.HasField("shape") and dims:
            out.type.tensor_type.ClearField("shape")
    del m.graph.value_info[:]
    return m

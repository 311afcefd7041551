"""Models built in the repo with onnx.helper, for tests and benchmarks of dynamic shapes.

- `bert_like(...)`: a small BERT-style encoder with a symbolic sequence length (and batch): word and
  position embeddings (Gather; positions from Shape -> Gather -> Range, so shape values flow at run time),
  LayerNormalization, multi-head attention from MatMul / Reshape / Transpose / Softmax, a Gelu written
  with Erf, and residual Adds. Random weights from a seed.
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
    half, one = b.const("half", np.array(0.5, np.float32)), b.const("onef", np.array(1.0, np.float32))
    sqrt2 = b.const("sqrt2", np.array(math.sqrt(2.0), np.float32))
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
        h = b.linear(x, hidden, ffn, f"{p}_ffn1")
        gelu = b.op("Mul", [b.op("Mul", [h, half], f"{p}_gelu_half"),
                            b.op("Add", [b.op("Erf", [b.op("Div", [h, sqrt2], f"{p}_gelu_div")], f"{p}_erf"), one],
                                 f"{p}_gelu_1p")], f"{p}_gelu")
        x = b.layer_norm(b.op("Add", [x, b.linear(gelu, ffn, hidden, f"{p}_ffn2")], f"{p}_res2"), hidden,
                         f"{p}_ln2")
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    graph = helper.make_graph(
        b.nodes, "bert_like", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [batch, seq, hidden])],
        b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="ge.models")
    model.ir_version = min(model.ir_version, 8)  # loadable by the onnxruntime of this environment
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

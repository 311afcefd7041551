"""SessionOptions.optimized_model_filepath: the graph after ge's graph passes, written as an ONNX model.

onnxruntime writes its optimised graph (folded, fused) for a user to load again or to inspect. ge writes the
graph its pipeline leaves (ge/passes PIPELINE: constants folded, BatchNorm folded into Convs, identities and
transpose pairs gone, activations recognised and fused), before the lowering that packs weights into its
kernels' layouts (those are not ONNX). Its fused ops are ge's own, so each is written back as the ONNX ops
it computes:

    ge::FusedConv[activation](x, W, B, z)  -> Conv(x, W, B) [-> Add(., z)] [-> the activation]
    ge::FusedMatMul[activation](a, b, c)   -> MatMul(a, b) [-> Add(., c)] [-> the activation]
    ge::FusedGemm[activation](a, b, c)     -> Gemm(a, b, c) [-> the activation]
    ge::Silu(x) -> x * Sigmoid(x);   ge::Gelu(x) -> x * 0.5 * (1 + Erf(x / sqrt 2))

Any other ge op, and control flow (its bodies), is refused naming the node. External initializers follow
onnxruntime's session config keys `session.optimized_model_external_initializers_file_name` and
`..._min_size_in_bytes` (default 1024). A `.ort` path (onnxruntime's own format) is refused.
"""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..compiler import bind_input_shapes, import_model
from ..errors import UsageError
from ..ir.dtypes import to_onnx
from ..passes import run_pipeline

EXTERNAL_FILE = "session.optimized_model_external_initializers_file_name"
EXTERNAL_MIN = "session.optimized_model_external_initializers_min_size_in_bytes"
FUSED = {"FusedConv": "Conv", "FusedMatMul": "MatMul", "FusedGemm": "Gemm"}
GE_ONLY_ATTRS = ("activation", "activation_params")


class _Writer:
    def __init__(self, graph):
        self.graph, self.nodes, self.extra = graph, [], []
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}__ge{self.count}"

    def const(self, base: str, value) -> str:
        name = self.name(base)
        self.extra.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def add(self, op: str, inputs: list[str], output: str, name: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], name=name, **attrs))
        return output

    # -- one activation after `x`, written to `out` ----------------------------------------------------
    def activation(self, act: str, params: list, x: str, out: str, name: str, dtype) -> str:
        p = [float(v) for v in params or ()]
        if act in ("Relu", "Sigmoid", "Tanh", "HardSwish"):
            return self.add(act, [x], out, name)
        if act == "LeakyRelu":
            return self.add(act, [x], out, name, alpha=p[0] if p else 0.01)
        if act == "HardSigmoid":
            return self.add(act, [x], out, name, alpha=p[0] if p else 0.2, beta=p[1] if len(p) > 1 else 0.5)
        if act == "Clip":
            lo = self.const(f"{name}_min", np.array(p[0] if p else -np.inf, dtype))
            hi = self.const(f"{name}_max", np.array(p[1] if len(p) > 1 else np.inf, dtype))
            return self.add("Clip", [x, lo, hi], out, name)
        if act == "Silu":
            s = self.add("Sigmoid", [x], self.name(f"{name}_sigmoid"), self.name(name))
            return self.add("Mul", [x, s], out, name)
        if act == "Gelu":
            d = self.add("Div", [x, self.const("sqrt2", np.array(math.sqrt(2), dtype))], self.name(name), self.name(name))
            e = self.add("Erf", [d], self.name(name), self.name(name))
            a = self.add("Add", [e, self.const("one", np.array(1, dtype))], self.name(name), self.name(name))
            m = self.add("Mul", [x, a], self.name(name), self.name(name))
            return self.add("Mul", [m, self.const("half", np.array(0.5, dtype))], out, name)
        raise UsageError(f"optimized_model_filepath: activation '{act}' of node '{name}' has no ONNX form here")

    def node(self, n) -> None:
        ins = [v.name if v is not None else "" for v in n.inputs]
        outs = [v.name for v in n.outputs]
        if n.bodies:
            raise UsageError(f"optimized_model_filepath: {n.op_type} node '{n.name}' has bodies (control flow), "
                             "which ge does not write back to ONNX yet")
        if n.domain != "ge":
            attrs = {k: _attr(k, v, n) for k, v in n.attrs.items() if not (isinstance(v, list) and not v)}
            self.nodes.append(helper.make_node(n.op_type, ins, outs, name=n.name, domain=n.domain or None, **attrs))
            return
        dtype = n.outputs[0].dtype
        if n.op_type in ("Silu", "Gelu"):
            self.activation(n.op_type, [], ins[0], outs[0], n.name, dtype)
            return
        if n.op_type not in FUSED:
            raise UsageError(f"optimized_model_filepath: ge op {n.op_type} (node '{n.name}') has no ONNX form; "
                             "disable the pass that made it (SessionOptions.graph_optimization_level) to write "
                             "the model")
        base, act = FUSED[n.op_type], n.attrs.get("activation", "") or ""
        attrs = {k: _attr(k, v, n) for k, v in n.attrs.items() if k not in GE_ONLY_ATTRS}
        n_base = 3 if base in ("Conv", "Gemm") else 2
        extra = [i for i in ins[n_base:] if i]
        y = outs[0] if not extra and not act else self.name(n.name)
        self.nodes.append(helper.make_node(base, [i for i in ins[:n_base]], [y], name=n.name, **attrs))
        if extra:
            y = self.add("Add", [y, extra[0]], outs[0] if not act else self.name(n.name), self.name(n.name))
        if act:
            self.activation(act, n.attrs.get("activation_params", []), y, outs[0], self.name(n.name), dtype)


def _attr(key: str, value, node):
    if isinstance(value, np.ndarray):
        return numpy_helper.from_array(value)
    if isinstance(value, (int, float, str, bytes)) or (isinstance(value, list) and all(
            isinstance(x, (int, float, str)) for x in value)):
        return value
    raise UsageError(f"optimized_model_filepath: attribute '{key}' of node '{node.name}' ({type(value).__name__}) "
                     "has no ONNX form here")


def _info(v):
    if not v.is_tensor:
        raise UsageError(f"optimized_model_filepath: '{v.name}' is a {v.kind}; ge writes tensor graphs only")
    return helper.make_tensor_value_info(v.name, to_onnx(v.dtype), list(v.shape) if v.shape is not None else None)


def optimized_graph(model, options):
    """The ir.Graph after ge's graph pipeline (no lowering), as the session compiled it."""
    graph = bind_input_shapes(import_model(model), options.input_shape)
    run_pipeline(graph, options, lower=False)
    return graph


def to_model(graph) -> onnx.ModelProto:
    w = _Writer(graph)
    for n in graph.nodes:
        w.node(n)
    used = {v for n in graph.nodes for v in n.inputs if v is not None} | set(graph.outputs)
    inits = [numpy_helper.from_array(v.const, v.name) for v in graph.values.values()
             if v in used and v.const is not None and v.producer is None and v not in graph.inputs]
    proto = helper.make_graph(w.nodes, graph.name, [_info(v) for v in graph.inputs],
                              [_info(v) for v in graph.outputs], initializer=inits + w.extra)
    opsets = [helper.make_opsetid(d, v) for d, v in graph.opsets.items() if d != "ge"]
    model = helper.make_model(proto, opset_imports=opsets, producer_name="ge")
    model.ir_version = min(model.ir_version, 10)
    return model


def write_optimized(model, options, config: dict, path: str) -> None:
    if str(path).endswith(".ort"):
        raise UsageError(f"optimized_model_filepath '{path}': ge writes ONNX models, not onnxruntime's .ort format")
    proto = to_model(optimized_graph(model, options))
    location = config.get(EXTERNAL_FILE, "")
    if location:
        onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True, location=location,
                        size_threshold=int(config.get(EXTERNAL_MIN, "1024")))
    else:
        onnx.save_model(proto, path)

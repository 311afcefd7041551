"""fuse_activation: Conv / Gemm / MatMul followed by an activation (and Conv followed by a residual Add)
become one "ge" op whose kernel applies them in the GEMM epilogue, while the output is still in cache.

    Conv(x, W, B) -> act              -> ge::FusedConv[..., activation, activation_params](x, W, B)
    Gemm(a, b, c) -> act              -> ge::FusedGemm[...](a, b, c)
    MatMul(a, b)  -> act              -> ge::FusedMatMul[...](a, b)
    Conv(x, W, B) -> Add(., z) [-> act] -> ge::FusedConv[...](x, W, B, z)    y = act(conv(x) + B + z)
    MatMul(a, b) -> Add(., c) [-> act]  -> ge::FusedMatMul[...](a, b, c)       c a bias row: [N], [1, N]...
    Gemm / MatMul -> Reshape -> act     -> ge::FusedGemm[..., act] -> Reshape   (elementwise act moves up)

Activations: Relu, LeakyRelu (params [alpha]), Clip with constant bounds ([min, max]), Sigmoid,
HardSigmoid ([alpha, beta]), Tanh, HardSwish, and recognize_activations' ge::Silu and ge::Gelu (its tanh form as
activation "GeluTanh"). `activation` is the ONNX op name. A two-input Sum (ResNet's
residual) counts as Add. The fused op keeps the original op's attributes.

Algorithm, one sweep in order, matching each activation / Add against its producer:
  Step 1: match. The producer is a Conv / Gemm / MatMul, or a fused op without an activation yet; its
          only reader is this node, and its output is not a graph output; the fused op is registered (so
          the pipeline never produces an op no kernel runs). For Add, the residual z has exactly the
          Conv's output shape and dtype (no broadcasting), is not an input of the Conv (a kernel may
          write the result over z), and the producer has no residual yet.
  Step 2: replace producer and node by the fused op, which keeps the node's output name. Readers come
          after producers, so Conv -> Add -> Relu fuses fully in one sweep.

A MatMul's bias is an Add operand holding one value per output column (a linear layer as torch and tf2onnx
export it: ViT's and BERT's MatMul + Add, so their GELU fuses too; the epilogue computes y + 0 + c, the
same bits as the Add). The bias fuses with symbolic rows too (an export's [batch, seq, hidden]): the bias is
a static row and the MatMul's last dim a static N, so the Add cannot broadcast x.
Limits: float outputs only; an activation after a residual Add fuses only into that FusedConv; Gemm takes
no residual (it already has C), MatMul only a bias row; a residual Add whose operand shapes are not static
stays.
Invariant: outputs are unchanged up to float rounding; no graph output is renamed.
"""
from __future__ import annotations

import numpy as np

from ..kernels.registry import is_registered
from .pattern import is_float, only_reader, producer, replace_pattern

FUSED = {"Conv": "FusedConv", "Gemm": "FusedGemm", "MatMul": "FusedMatMul"}
# activation -> its attributes, in activation_params order, with ONNX defaults
ACTIVATIONS = {"Relu": {}, "LeakyRelu": {"alpha": 0.01}, "Clip": {}, "Sigmoid": {},
               "HardSigmoid": {"alpha": 0.2, "beta": 0.5}, "Tanh": {}, "HardSwish": {}}
GE_ACTIVATIONS = {"Silu": {}, "Gelu": {}}   # recognize_activations' ops (ge domain)


def _activation_name(act) -> str:
    """The epilogue's name for an activation node (ge::Gelu[approximate='tanh'] is "GeluTanh")."""
    if act.op_type == "Gelu" and act.attrs.get("approximate", "none") == "tanh":
        return "GeluTanh"
    return act.op_type


def _activation_params(graph, act) -> list[float] | None:
    """activation_params of an activation node, or None when they are not compile-time constants."""
    if act.op_type == "Gelu" and act.attrs.get("approximate", "none") not in ("none", "tanh"):
        return None
    if act.op_type != "Clip":
        if len(act.inputs) != 1:
            return None
        return [float(act.attrs.get(k, d)) for k, d in {**ACTIVATIONS, **GE_ACTIVATIONS}[act.op_type].items()]
    finfo = np.finfo(act.inputs[0].dtype)
    if graph.opset < 11:
        return [float(act.attrs.get("min", finfo.min)), float(act.attrs.get("max", finfo.max))]
    bounds = list(act.inputs[1:3]) + [None] * (3 - len(act.inputs))
    if any(v is not None and (v.const is None or v.const.size != 1) for v in bounds):
        return None
    return [float(finfo.min if bounds[0] is None else bounds[0].const.reshape(())),
            float(finfo.max if bounds[1] is None else bounds[1].const.reshape(()))]


def _fusable(graph, v, reader, ops=tuple(FUSED)):
    """The Conv/Gemm/MatMul (or fused op without activation) making `v` for `reader` alone, else None."""
    p = producer(v, ops) or producer(v, [FUSED[o] for o in ops], "ge")
    if p is None or len(p.outputs) != 1 or not is_float(v) or not only_reader(graph, v, reader):
        return None
    if p.domain == "ge" and p.attrs.get("activation", ""):
        return None
    return p if is_registered(FUSED.get(p.op_type, p.op_type), "ge") else None


def _position(graph, v) -> int:
    return -1 if v.producer is None else graph.nodes.index(v.producer)


def _fuse(graph, p, node, inputs, attrs) -> None:
    fused = FUSED.get(p.op_type, p.op_type)
    graph.opsets.setdefault("ge", 1)  # the domain's version, for anyone exporting the graph
    replace_pattern(graph, list({id(n): n for n in (p, node)}.values()), fused, inputs, {**p.attrs, **attrs}, "ge",
                    name=p.name)


def _fuse_through_reshape(graph, act) -> bool:
    """producer -> Reshape -> activation: the activation, elementwise, moves into the producer's epilogue and
    the Reshape reads the fused result (GPT-2's Conv1D: Gemm on [batch*seq, n], Reshape, gelu)."""
    r = producer(act.inputs[0], ("Reshape",))
    if r is None or not only_reader(graph, act.inputs[0], act) or act.outputs[0] in graph.outputs:
        return False
    p = _fusable(graph, r.inputs[0], r)
    params = None if p is None else _activation_params(graph, act)
    if params is None or act.outputs[0].dtype != r.inputs[0].dtype:
        return False
    _fuse(graph, p, p, list(p.inputs), {"activation": _activation_name(act), "activation_params": params})
    graph.replace_all_uses_with(act.outputs[0], r.outputs[0])
    graph.erase_node(act)
    return True


def _fuse_activation(graph, act) -> bool:
    # Step 1: match producer -> activation (or producer -> Reshape -> activation)
    p = _fusable(graph, act.inputs[0], act)
    params = None if p is None else _activation_params(graph, act)
    if params is None:
        return _fuse_through_reshape(graph, act)
    # Step 2: one fused op
    _fuse(graph, p, act, list(p.inputs), {"activation": _activation_name(act), "activation_params": params})
    return True


def _fuse_residual(graph, add) -> bool:
    # Step 1: match Conv -> Add(., z), preferring the Conv nearest the Add
    y, (a, b) = add.outputs[0], add.inputs
    for x, z in sorted([(a, b), (b, a)], key=lambda xz: _position(graph, xz[0]), reverse=True):
        conv = _fusable(graph, x, add, ops=("Conv",))
        if conv is None or len(conv.inputs) > 3 or z is x or z in conv.inputs:
            continue
        if not (x.is_static and x.shape == z.shape == y.shape and x.dtype == z.dtype == y.dtype):
            continue
        # Step 2: one FusedConv reading z
        inputs = list(conv.inputs) + [None] * (3 - len(conv.inputs)) + [z]
        _fuse(graph, conv, add, inputs, {"activation": conv.attrs.get("activation", ""),
                                         "activation_params": conv.attrs.get("activation_params", [])})
        return True
    return False


def _fuse_bias(graph, add) -> bool:
    # Step 1: match MatMul -> Add(., c) with c one value per output column
    y, (a, b) = add.outputs[0], add.inputs
    for x, c in ((a, b), (b, a)):
        mm = _fusable(graph, x, add, ops=("MatMul",))
        if mm is None or len(mm.inputs) > 2 or c is x or not c.is_static or x.shape is None or len(x.shape) < 2:
            continue
        n = x.shape[-1]
        if not (isinstance(n, int) and c.dtype == x.dtype and c.shape and c.shape[-1] == n
                and all(d == 1 for d in c.shape[:-1]) and len(c.shape) <= len(x.shape)):
            continue
        # Step 2: one FusedMatMul reading the bias
        _fuse(graph, mm, add, list(mm.inputs) + [c], {"activation": mm.attrs.get("activation", ""),
                                                      "activation_params": mm.attrs.get("activation_params", [])})
        return True
    return False


def fuse_activation(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        if not node.inputs or node.domain not in ("", "ge"):
            continue
        if node.op_type in (ACTIVATIONS if node.domain == "" else GE_ACTIVATIONS):
            changed |= _fuse_activation(graph, node)
        elif node.domain == "" and node.op_type in ("Add", "Sum") and len(node.inputs) == 2 and None not in node.inputs:
            changed |= _fuse_bias(graph, node) or _fuse_residual(graph, node)
    return changed

"""precision_mode: GE's precision modes (ge.exec.precision_mode / atc --precision_mode) on float32 graphs.

Which nodes store their float32 results in a 16-bit float (precision_reduce), by mode:
    must_keep_origin_dtype      none (the default: the only mode that never changes results)
    force_fp32, cube_fp16in_fp32out
                                none: ge computes every op in float32 already (a float16 model's ops run in
                                float32 between Casts, compute_in_float32), so on this CPU both are the origin
    force_fp16                  every node with a float32 input or output
    allow_fp32_to_fp16          matrix ops (WHITE: Conv, MatMul, Gemm...) only; vector ops keep float32
    allow_mix_precision[_fp16]  GE's lists: WHITE true, BLACK false (Softmax, norms, reductions, Exp/Log...),
                                GRAY (the rest) follows its inputs: true when one comes from a reduced node
    allow_mix_precision_bf16    the same in bfloat16
`modify_mixlist` ({"white-list"|"black-list"|"gray-list": {"to-add"|"to-remove": [op types]}}, GE's JSON)
moves op types between the lists; `keep_dtype` (node names or op types, GE's "OpName:x" / "OpType:y") keeps
those nodes in float32 whatever the mode.

Algorithm, one sweep in order (run once, after the PIPELINE's folds and fusions: Conv + BN + Relu is one
FusedConv by then, reduced as a whole; on SqueezeNet this keeps the fusions and the in-place Concats):
  Step 1: decide per node (mode, lists, keep_dtype; a gray node looks at its inputs' producers).
  Step 2: a reduced node reads a Cast to the 16-bit type of each float32 input (one per value; on a
          constant it folds once, fold_constants), and its float32 outputs become 16-bit in place.
  Step 3: a node kept in float32 that reads a reduced value reads a Cast back (one per value); a graph
          output keeps its float32 type through a Cast under its own name.
compute_in_float32 then brackets the reduced ops, so their kernels compute in float32 and store 16 bits.
Limits: values of unknown dtype are left alone; only float32 is reduced (float64 stays).
"""
from __future__ import annotations

import numpy as np

import difflib

from ..errors import GEError
from ..ir.dtypes import BFLOAT16, FLOAT16, to_onnx
from ..kernels import registered_ops
from ..options import ACTIONS, LISTS, MODES  # noqa: F401 (the modes and lists, checked by Options)

F32 = np.dtype(np.float32)
WHITE = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm", "Einsum", "FusedConv", "FusedGemm", "FusedMatMul"})
BLACK = frozenset({
    "Softmax", "LogSoftmax", "Hardmax", "LayerNormalization", "RMSNormalization", "GroupNormalization",
    "InstanceNormalization", "LpNormalization", "Exp", "Log", "Pow", "Sqrt", "Reciprocal", "Erf", "CumSum",
    "CumProd", "ReduceSum", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
    "ReduceLogSumExp", "ReduceSumSquare", "ReduceMax", "ReduceMin", "MeanVarianceNormalization", "Attention"})
NEVER = frozenset({"Cast", "CastLike"})   # Casts keep the types they name


def reduced_dtype(mode: str):
    """The 16-bit type a mode stores in, or None when it changes nothing."""
    if mode in ("force_fp16", "allow_fp32_to_fp16", "allow_mix_precision", "allow_mix_precision_fp16"):
        return FLOAT16
    return BFLOAT16 if mode == "allow_mix_precision_bf16" else None


def mix_lists(mixlist) -> tuple[frozenset, frozenset]:
    """(white, black) after modify_mixlist's ((list, action, op type), ...); gray is everything else."""
    white, black, ops = set(WHITE), set(BLACK), set(registered_ops())
    for lst, action, op in mixlist:
        if op not in ops:
            close = difflib.get_close_matches(op, ops, n=3, cutoff=0.5)
            raise GEError(f"modify_mixlist: '{op}' is not an op type ge registers"
                          + (f"; did you mean {', '.join(map(repr, close))}?" if close else
                             f" (registered: {', '.join(sorted(ops))})"))
        white.discard(op)
        black.discard(op)
        if action == "to-add":
            {"white-list": white, "black-list": black}.get(lst, set()).add(op)
    return frozenset(white), frozenset(black)


def _keep(graph, keep_dtype) -> tuple[set, set]:
    names, types = {n.name for n in graph.nodes}, {n.op_type for n in graph.nodes}
    keep_names, keep_types = set(), set()
    for entry in keep_dtype:
        kind, sep, what = entry.partition(":")
        what = what.strip() if sep else entry
        if sep and kind.strip() == "OpType" or (not sep and what in types and what not in names):
            if what not in types:
                raise GEError(f"keep_dtype: op type '{what}' is not in graph '{graph.name}' "
                              f"(its op types: {', '.join(sorted(types))})")
            keep_types.add(what)
        elif (sep and kind.strip() == "OpName") or (not sep and what in names):
            if what not in names:
                raise GEError(f"keep_dtype: no node '{what}' in graph '{graph.name}'")
            keep_names.add(what)
        else:
            raise GEError(f"keep_dtype entry '{entry}' is neither a node name nor an op type of graph "
                          f"'{graph.name}' (write OpName:<name> or OpType:<type>)")
    return keep_names, keep_types


def _decide(graph, mode, white, black, keep) -> set:
    """Step 1: the names of the nodes whose float32 results are stored in 16 bits."""
    keep_names, keep_types = keep
    reduced: set[str] = set()
    for node in graph.nodes:
        floats = [v for v in (*node.inputs, *node.outputs) if v is not None and v.dtype == F32]
        if not floats or node.op_type in NEVER or node.name in keep_names or node.op_type in keep_types:
            continue
        if mode == "force_fp16" or node.op_type in white:
            reduced.add(node.name)
        elif mode != "allow_fp32_to_fp16" and node.op_type not in black and any(
                v is not None and v.producer is not None and v.producer.name in reduced for v in node.inputs):
            reduced.add(node.name)
    return reduced


def _cast(graph, v, dtype, index, casts):
    key = (v.name, np.dtype(dtype).name)
    c = casts.get(key)
    if c is None:
        node = graph.add_node("Cast", [v], [graph.fresh_name(f"{v.name}_{np.dtype(dtype).name}")],
                              {"to": to_onnx(dtype)}, name=graph.fresh_name(f"{v.name}_cast"), index=index)
        c = casts[key] = node.outputs[0]
        c.dtype, c.shape = np.dtype(dtype), v.shape
    return c


def precision_mode(graph, options) -> bool:
    mode = options.precision_mode
    half = reduced_dtype(mode)
    if half is None:
        return False
    white, black = mix_lists(options.modify_mixlist)
    reduced = _decide(graph, mode, white, black, _keep(graph, options.keep_dtype))
    narrowed, casts, outputs = set(), {}, set(map(id, graph.outputs))
    i = 0
    while i < len(graph.nodes):
        node = graph.nodes[i]
        want = half if node.name in reduced else None
        for k, v in enumerate(() if node.op_type in NEVER else node.inputs):     # Step 2 / 3: the inputs' Casts
            if v is None:
                continue
            before = len(graph.nodes)
            if want is not None and v.dtype == F32:
                graph.set_input(node, k, _cast(graph, v, half, i, casts))
            elif want is None and id(v) in narrowed:
                graph.set_input(node, k, _cast(graph, v, F32, i, casts))
            i += len(graph.nodes) - before   # a Cast made for an earlier reader adds no node: nothing to skip
        if want is not None:
            for k, v in enumerate(node.outputs):
                if v.dtype != F32:
                    continue
                if id(v) in outputs:   # a graph output keeps its name and float32 type
                    narrow = graph.add_value(graph.fresh_name(f"{v.name}_{half.name}"), half, v.shape)
                    narrow.producer, node.outputs[k], v.producer = node, narrow, None
                    graph.add_node("Cast", [narrow], [v.name], {"to": to_onnx(F32)},
                                   name=graph.fresh_name(f"{v.name}_cast"), index=i + 1)
                    narrowed.add(id(narrow))
                else:
                    v.dtype = half
                    narrowed.add(id(v))
        i += 1
    return bool(reduced)

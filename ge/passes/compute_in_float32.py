"""compute_in_float32: ops on float16 / bfloat16 run in float32 between Casts (GE's Cast insertion for a
dtype an op's kernel lacks).

ge's kernels compute in float32/float64; a 16-bit float tensor reaches them as its uint16 bits. So:
    y:f16 = Op(x:f16, w:f16, i:i64)
 -> x32 = Cast[to=f32](x);  w32 = Cast[to=f32](w);  y32:f32 = Op(x32, w32, i);  y:f16 = Cast[to=f16](y32)
Each result is rounded to its 16-bit type as ONNX says it is, so results are those of the model's types up
to float32's (better) intermediate rounding. Ops that only move bits (MOVES_BITS: reshapes, transposes,
slices, gathers, concats, pads, Cast itself) keep the 16-bit tensors: a copy of uint16 is exact and costs
half the bytes. A constant 16-bit weight's Cast folds once (fold_constants), so the weights are float32 in
the plan.

Algorithm, one sweep in order:
  Step 1: match a node with a 16-bit float input or output whose op is not in MOVES_BITS.
  Step 2: each such input reads a Cast to float32 of it, one per value (inserted before its first reader
          in order, so it precedes every later one).
  Step 3: each 16-bit output becomes float32 and a Cast back to the output's type keeps the old name.
Limits: values without a dtype (the frontend knew none) are left alone; ops inside subgraphs are not
bracketed. Runs first in the PIPELINE (before infer_shapes, whose kernel infers refuse 16-bit inputs).
Invariant: graph inputs, outputs and their types are unchanged; idempotent (a second sweep finds nothing).
"""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import is_half, to_onnx

F32 = np.dtype(np.float32)
MOVES_BITS = frozenset({
    "Cast", "CastLike", "Constant", "ConstantOfShape", "Identity", "Reshape", "Flatten", "Squeeze",
    "Unsqueeze", "Transpose", "Concat", "Split", "Slice", "Expand", "Tile", "DepthToSpace", "SpaceToDepth",
    "Gather", "GatherElements", "GatherND", "Shape", "Size", "Compress", "ReverseSequence", "Pad",
})


def bracket(graph, node, index: int, dtype, casts: dict) -> int:
    """Make `node` (at `index`) compute in `dtype`: Casts on its 16-bit inputs and back from its outputs.
    `casts` maps a value to its Cast (shared by readers). Returns the node's new index."""
    to = to_onnx(dtype)
    for k, v in enumerate(node.inputs):
        if v is None or not is_half(v.dtype):
            continue
        c = casts.get((v.name, to))
        if c is None:
            cast = graph.add_node("Cast", [v], [graph.fresh_name(f"{v.name}_{np.dtype(dtype).name}")],
                                  {"to": to}, name=graph.fresh_name(f"{v.name}_cast"), index=index)
            c = casts[(v.name, to)] = cast.outputs[0]
            c.dtype, c.shape = np.dtype(dtype), v.shape
            index += 1
        graph.set_input(node, k, c)
    for k, v in enumerate(node.outputs):
        if not is_half(v.dtype):
            continue
        wide = graph.add_value(graph.fresh_name(f"{v.name}_{np.dtype(dtype).name}"), dtype, v.shape)
        wide.producer, node.outputs[k], v.producer = node, wide, None
        graph.add_node("Cast", [wide], [v.name], {"to": to_onnx(v.dtype)},
                       name=graph.fresh_name(f"{v.name}_cast"), index=index + 1)
    return index


def needs_float32(node) -> bool:
    return node.op_type not in MOVES_BITS and any(
        v is not None and is_half(v.dtype) for v in (*node.inputs, *node.outputs))


def compute_in_float32(graph) -> bool:
    changed, casts, i = False, {}, 0
    while i < len(graph.nodes):
        node = graph.nodes[i]
        if needs_float32(node):
            i, changed = bracket(graph, node, i, F32, casts), True
        i += 1
    return changed

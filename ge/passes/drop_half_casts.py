"""drop_half_casts: ops whose kernels take and give float16 / bfloat16 lose the Casts around them, so the
feature map between them stays 16-bit (GE's 16-bit tensors between Cube and Vector ops under mixed
precision, with no float32 copy of either side).

    x32 = Cast[to=f32](x:f16);  y32 = Op(x32, W:f32 const, ...);  y:f16 = Cast[to=f16](y32)
 -> y:f16 = Op(x, W, ...)

compute_in_float32 brackets every 16-bit op with Casts (each result rounded to its type); a kernel in
kernels/half.NATIVE16 (conv_half.py, pool_half.py, vector_half.py) converts to float32 in registers and
rounds once when it stores, so the result has the same rounding without the two full-size float32
tensors that were live around the op. Constant float32 inputs (conv weights, BatchNormalization's
statistics) stay float32.

Algorithm, one sweep in order:
  Step 1: match a node in NATIVE16 (its `when` holds) with one output whose one reader is a Cast to a
          16-bit type H (not a graph output), every other input a constant or a Cast to float32 of an H value.
  Step 2: the node reads the H values instead of the Casts' results and produces the Cast's result (its
          name and readers), replacing the Cast after it (pattern.replace_pattern).
  Step 3: the Casts before it go with eliminate_dead_code when nothing else reads them.
Limits: single-output ops; one 16-bit type per node. Runs in the LOWERING after pack_conv_weights (the
16-bit conv kernel is IMPLICIT's on packed weights) and pack_bf16_convs (which takes its Convs first).
Invariant: graph inputs and outputs and their types are unchanged.
"""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import is_half
from ..kernels.half import NATIVE16
from .pattern import producer, replace_pattern

F32 = np.dtype(np.float32)


def _narrow(v, half):
    """The `half` value v is a float32 Cast of (None: v is a constant, kept), or False when it is neither."""
    if v is None or v.const is not None:
        return None
    cast = producer(v, ("Cast",))
    if cast is None or v.dtype != F32 or cast.inputs[0].dtype != half:
        return False
    return cast.inputs[0]


def _match(graph, node):
    """Step 1: (the 16-bit inputs, the Cast after node) when node drops its Casts, else None."""
    when = NATIVE16.get((node.op_type, node.domain))
    if when is None or not when(node) or len(node.outputs) != 1:
        return None
    y = node.outputs[0]
    after = y.users[0] if len(y.users) == 1 and y not in graph.outputs else None
    if after is None or after.op_type != "Cast" or y.dtype != F32 or not is_half(after.outputs[0].dtype):
        return None
    half, inputs = after.outputs[0].dtype, []
    for v in node.inputs:
        n = _narrow(v, half)
        if n is False:
            return None
        inputs.append(v if n is None else n)
    return inputs, after


def drop_half_casts(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        m = _match(graph, node)
        if m is None:
            continue
        inputs, after = m
        # Step 2: the node on the 16-bit values, under the Cast's result (Step 3: DCE)
        replace_pattern(graph, [node, after], node.op_type, inputs, dict(node.attrs), domain=node.domain,
                        name=node.name, results=[after.outputs[0]])
        changed = True
    return changed

"""pack_rnn_weights: constant RNN/GRU/LSTM weights stored once transposed, as the GEMM core reads them.

    LSTM(x, W[D, G*H, I], R[D, G*H, H], ...)  -> ge::LSTM[weights_kn=1](x, Wt[D, I, G*H], Rt[D, H, G*H], ...)

(the same for RNN and GRU). rnn.py's GEMMs (X @ W^T for all steps, H @ R^T per step) read their B as
[K, N] rows; ONNX stores W and R as [N, K]. Without the pass the kernel transposes both on every run:
for an LSTM of hidden 256 and input 256 that was 8 of its 15 ms (the strided copy through workspace
slices), as a blocked transpose still ~0.3 ms.

  Step 1: match an RNN/GRU/LSTM node whose W and R are float constants of the input's dtype.
  Step 2: new constants with W and R transposed per direction (the old ones go when nothing else reads them).
  Step 3: the node becomes ge::<op> with the same inputs otherwise, its attributes and `weights_kn=1`.
Invariant: outputs keep their bits (the kernel runs the same GEMMs on the same numbers).
"""
from __future__ import annotations

import numpy as np

from .pattern import replace_pattern

RECURRENT = ("RNN", "GRU", "LSTM")


def _packable(node) -> bool:
    if node.op_type not in RECURRENT or node.domain != "" or len(node.inputs) < 3:
        return False
    x, w, r = node.inputs[:3]
    return (w is not None and r is not None and w.const is not None and r.const is not None
            and w.const.ndim == 3 and r.const.ndim == 3 and w.const.dtype.kind == "f"
            and r.const.dtype == w.const.dtype and (x.dtype is None or x.dtype == w.const.dtype))


def pack_rnn_weights(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        # Step 1: match
        if not _packable(node):
            continue
        # Step 2: the transposed constants
        w, r = node.inputs[1], node.inputs[2]
        wt = graph.add_const(graph.fresh_name(f"{w.name}_kn"), np.ascontiguousarray(w.const.transpose(0, 2, 1)))
        rt = graph.add_const(graph.fresh_name(f"{r.name}_kn"), np.ascontiguousarray(r.const.transpose(0, 2, 1)))
        # Step 3: the ge:: node reading them
        graph.opsets.setdefault("ge", 1)
        inputs = [node.inputs[0], wt, rt] + list(node.inputs[3:])
        replace_pattern(graph, [node], node.op_type, inputs, {**node.attrs, "weights_kn": 1}, "ge",
                        name=node.name, results=list(node.outputs))
        changed = True
    return changed

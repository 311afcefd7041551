"""overflow_nodes: which nodes' float32 results leave a 16-bit type's range on sample feeds (GE's overflow
detection, then keep_dtype).

A precision mode stores a reduced node's result in float16, whose largest finite value is 65504. A model
whose float32 activations go past it gets inf there, and inf - inf or inf * 0 one op later is NaN. No op
list can know this from the graph: the ops that overflow are the white-list convolutions themselves (the
random-weight ResNet-50 light model reaches 2.1e5 in its last blocks and its logits, ShuffleNet 4.2e7).
GE's answer is data: its overflow detection (`ge.exec.enableDumpDebug`, `dumpDebugMode=aicore_overflow`)
names the operators, and the user keeps them in float32 (`keep_dtype`, or `modify_mixlist`'s black list).
onnxruntime's float16 converter has the same split: a fixed block list (TopK, Resize, Range, CumSum, Min,
Max, the ML ops...) plus a data-driven search (`auto_convert_mixed_precision`) for the rest.

    keep = ge.overflow_nodes(model, feeds)               # run once in float32, look at every result
    plan = ge.compile(model, ge.Options(precision_mode="allow_mix_precision", keep_dtype=keep))

Algorithm:
  Step 1: import and optimise the model as compile does (the same pipeline, so node names are those the
          precision pass sees: a FusedConv carries its Conv's name).
  Step 2: make every float32 result a graph output and run that graph in float32 on `feeds`.
  Step 3: name the nodes with a float32 result or input (a feed, a weight, another node's result) whose
          largest |element| times `margin` passes the type's largest finite value: a reduced reader of a
          kept value would Cast it to float16 and overflow there.
Limits: only as good as its feeds (margin 2 leaves a factor of two for other inputs); a fused kernel's
inner values stay float32 in registers, so only stored results count. bfloat16 has float32's range: nothing.
"""
from __future__ import annotations

import numpy as np

from .api import Session
from .compiler import import_model, optimize
from .errors import GEError
from .ir.dtypes import FLOAT16
from .options import Options
from .passes.precision_mode import reduced_dtype

F32 = np.dtype(np.float32)


def overflow_nodes(model, feeds: dict, mode: str = "allow_mix_precision", margin: float = 2.0,
                   runtime: str = "v2") -> tuple[str, ...]:
    """The nodes whose float32 results on `feeds` would not fit `mode`'s 16-bit type (with `margin`), as
    `Options(keep_dtype=...)` entries ("OpName:<name>": a name may hold a colon)."""
    if margin < 1:
        raise GEError(f"overflow_nodes: margin must be >= 1 (got {margin}): it is how far below the type's "
                      "largest value a result must stay")
    half = reduced_dtype(mode)
    if half != FLOAT16:   # bfloat16 has float32's exponent range; the origin types change nothing
        return ()
    limit = float(np.finfo(np.float16).max) / margin
    graph = optimize(import_model(model), Options())                       # Step 1
    graph.outputs.extend([v for node in graph.nodes for v in node.outputs   # Step 2
                          if v.dtype == F32 and v not in graph.outputs])
    names = [v.name for v in graph.outputs]
    with Session(graph, runtime=runtime) as s:
        results = dict(zip(names, s.run(None, feeds)))
    for v in graph.inputs:
        if v.name in feeds:
            results[v.name] = np.asarray(feeds[v.name])
    return tuple(f"OpName:{node.name}" for node in graph.nodes            # Step 3
                 if any(_past(v, results, limit) for v in (*node.inputs, *node.outputs)))


def _past(v, results, limit) -> bool:
    """A float32 value (a result, a feed or a constant) with an element past `limit` (inf and NaN too)."""
    if v is None or v.dtype != F32:
        return False
    a = v.const if v.const is not None else results.get(v.name)
    return a is not None and a.size > 0 and not bool(np.all(np.abs(a) <= limit))

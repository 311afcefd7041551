"""kv_cache_pad: Options.kv_cache_static: the sizes a decoder step makes of its past length padded to the cache's.

With kv_cache_static (ge/kv_cache.py) the past length is a value, the `past_length` input, which
fold_symbolic carries as the symbol `kv_past`; the new tokens are [batch, 1] and the mask [batch, max_len].
The exporter uses the past length two ways: as data (position ids and the causal frontier: Range(0, new) +
past, compared with the key positions), which stays the input's value, and as a size (the key positions
Range(0, past + new), the 4-D mask's Expand / Reshape to [batch, 1, new, past + new]), which would make the
step's shapes follow the past. This pass pads every such size to the cache's rows (kv_past := max_len - new,
so past + new = max_len): the key positions cover every row of the cache, the mask is [batch, 1, new,
max_len], and what a row beyond the past holds is masked twice (the caller's mask is 0 there, and the causal
frontier compares the key position with the value of past_length). ge::CachedAttention reads the first
past + new rows only (it takes past_length too), so the padding costs no attention work.

Step 1: each shape operand (Reshape / Expand target, ConstantOfShape's shape, Range's limit) whose symbolic
        value holds kv_past in a size: for Range only when its length limit - start does (Range(past, past +
        new) is new long: its values stay data).
Step 2: the operand becomes the constant with kv_past := max_len - new; fold_symbolic and fold_constants
        make the rest static. A size left holding kv_past keeps its node dynamic, which Session refuses
        (kv_cache_static promises a static plan) naming the node.
"""
from __future__ import annotations

import numpy as np

from ..ir.symbolic import Expr
from .fold_symbolic import sym_of

SLOTS = {"Reshape": (1,), "Expand": (1,), "ConstantOfShape": (0,), "Range": (1,)}


def _holds(elems, name: str) -> bool:
    return elems is not None and any(isinstance(e, str) and any(name in m for m in Expr.of(e).terms) for e in elems)


def _padded(elems, name: str, size: int):
    """elems with `name` := size, all ints, or None."""
    out = []
    for e in elems:
        if isinstance(e, bool):
            return None
        x = Expr.of(e)
        value = Expr({(): 0})
        for mono, c in x.terms.items():
            term = Expr({(): c})
            for n in mono:
                term = term * (Expr({(): size}) if n == name else Expr({(n,): 1}))
            value = value + term
        if not value.is_const:
            return None
        out.append(value.const)
    return out


def kv_cache_pad(graph) -> bool:
    kv = getattr(graph, "kv_cache", None)
    if not kv or not kv.get("past"):
        return False
    name, size = kv["past_symbol"], kv["padded_past"]
    changed = False
    for node in list(graph.nodes):
        slots = SLOTS.get(node.op_type) if not node.domain else None
        for i in slots or ():
            # Step 1
            if i >= len(node.inputs) or node.inputs[i] is None:
                continue
            v = node.inputs[i]
            elems = sym_of(v)
            if not _holds(elems, name):
                continue
            if node.op_type == "Range":
                start = sym_of(node.inputs[0])
                if start is None or len(start) != 1 or len(elems) != 1:
                    continue
                length = (Expr.of(elems[0]) - Expr.of(start[0])).dim
                if not _holds((length,), name) or _holds(start, name):
                    continue
            # Step 2
            padded = _padded(elems, name, size)
            if padded is None:
                continue
            array = np.array(padded, dtype=v.dtype or np.int64).reshape(v.shape if v.shape is not None and all(
                isinstance(d, int) for d in v.shape) else (len(padded),))
            graph.set_input(node, i, graph.add_const(graph.fresh_name(f"{node.name}/kv_cache_pad"), array))
            changed = True
    return changed

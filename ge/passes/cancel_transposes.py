"""cancel_transposes: remove Transpose pairs that compose to the identity; merge other adjacent pairs.

Frontends of NHWC models (tensorflow.py) wrap each Conv/Pool in Transpose(NHWC->NCHW) ... Transpose(back);
where two such ops meet, a Transpose(perm=[0,2,3,1]) feeds a Transpose(perm=[0,3,1,2]): together, nothing.

Algorithm, one sweep in order, for each Transpose T2 whose input is made by a Transpose T1:
  Step 1: compose: T2(T1(x)) = Transpose(x, perm=[p1[i] for i in p2]).
  Step 2: identity: T2's readers read x instead and T2 goes; when T2's output is a graph output, T2 becomes
          an Identity (a free alias) so the output keeps its name.
          Otherwise T2 is replaced by one Transpose of x with the composed perm.
  Step 3: T1 goes when nobody reads it any more.
A lone Transpose with the identity perm is treated like Step 2 as well.

Limits: only direct chains; transposes separated by other ops (even pointwise ones) stay. The NHWC
frontend avoids most of those itself by following the NCHW layout through pointwise ops.
Invariant: no value changes; no graph output is renamed.
"""
from __future__ import annotations

from .pattern import producer, replace_pattern


def _perm(node) -> list[int] | None:
    perm = node.attrs.get("perm")
    if perm is None:
        rank = None if node.inputs[0].shape is None else len(node.inputs[0].shape)
        return None if rank is None else list(range(rank))[::-1]
    return [int(p) for p in perm]


def cancel_transposes(graph) -> bool:
    changed = False
    for t2 in list(graph.nodes):
        if t2.op_type != "Transpose" or t2.domain != "":
            continue
        p2 = _perm(t2)
        t1 = producer(t2.inputs[0], ("Transpose",))
        p1 = None if t1 is None else _perm(t1)
        if p2 is None or (t1 is not None and p1 is None):
            continue
        # Step 1: compose with the Transpose before (if any)
        if t1 is not None:
            src, perm = t1.inputs[0], [p1[i] for i in p2]
        else:
            src, perm = t2.inputs[0], p2
        if t1 is None and perm != sorted(perm):
            continue
        # Step 2: identity -> read the source; otherwise one Transpose with the composed perm
        out = t2.outputs[0]
        if perm == sorted(perm) and out not in graph.outputs:
            graph.replace_all_uses_with(out, src)
            graph.erase_node(t2)
        elif perm == sorted(perm):
            replace_pattern(graph, [t2], "Identity", [src], {}, name=t2.name)
        else:
            replace_pattern(graph, [t2], "Transpose", [src], {"perm": perm}, name=t2.name)
        # Step 3: the first Transpose, once unread
        if t1 is not None and not t1.outputs[0].users and t1.outputs[0] not in graph.outputs:
            graph.erase_node(t1)
        changed = True
    return changed

"""Tensor parallel (Options.parallel="tensor"): Megatron-style splits of transformer blocks over N devices.

Step 1: seeds. For each value x, the MatMuls reading it with a constant 2-D weight [d, c] are one *column*
        group (attention's Q, K, V; the FFN's up projection), each maybe followed by a bias Add.
Step 2: the region. From the group's outputs, forward through ops that keep the ranks' slices apart,
        following the split axis (the columns, then the heads after a Reshape, moved by Transposes):
        elementwise ops (a constant operand must not span the split axis), Softmax over another axis,
        MatMuls of two region values batched over it, Reshapes with a constant shape whose first given dim
        is the split one; to *row* MatMuls: a constant 2-D weight [c, d'] contracting the split axis.
        Anything else reading the region (a residual, a reduction over the split axis, no row exit) leaves
        the group whole: the model runs replicated there.
Step 3: the split. Rank r keeps columns [r c/N, (r+1) c/N) of the column weights and biases, the same rows
        of the row weights, and in each region Reshape the first given dim (heads, or the merged width) /N;
        each row MatMul's partial sums go through an HcomAllReduce (sum) before its bias Add, so the bias is
        added once. Embeddings, LayerNorms and residuals stay replicated.
Each rank's plan holds its own slices: the group's plan check compares the plans' structure and the digest
of the model they were cut from (the `_model` attribute of the collectives), not the weights.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ..errors import GEError
from ..hccl.world import DEFAULT_GROUP

# ops a region passes through: elementwise (with constants or region values), layout, attention's MatMul
PASS = {"Add", "Sub", "Mul", "Div", "Erf", "Relu", "Gelu", "Tanh", "Sigmoid", "Sqrt", "Pow", "Softmax",
        "Transpose", "Reshape", "MatMul", "Cast", "Identity"}


def split_tensor(graph, rank: int, size: int):
    if size == 1:
        return graph
    digest = _model_digest(graph)
    done, splits = set(), 0
    for x in list(graph.values.values()):
        group = [m for m in x.users if m.op_type == "MatMul" and m.inputs[0] is x and _weight(m) is not None
                 and id(m) not in done]
        if not group:
            continue
        plan = _region(group, size)
        if plan is None:
            continue
        starts, biases, reshapes, rows = plan
        for m in [*group, *rows]:
            done.add(id(m))
        _apply(graph, rank, size, group, biases, reshapes, rows, digest)
        splits += 1
    for node in graph.nodes:   # the split values' shapes: inferred again by the pipeline
        for v in node.outputs:
            if not v.is_const:
                v.shape = None
    if not splits:
        raise GEError(f"tensor parallel over {size} devices found no transformer block to split in "
                      f"'{graph.name}' (column MatMuls whose region ends in row MatMuls, widths divisible by {size})")
    return graph


def _weight(m):
    w = m.inputs[1]
    return w if w is not None and w.is_const and w.const.ndim == 2 and len(w.users) == 1 else None


def _bias(m):
    """The Add of a constant 1-D bias right after MatMul m (its only reader), or None."""
    out = m.outputs[0]
    if len(out.users) != 1 or out.users[0].op_type != "Add":
        return None
    add = out.users[0]
    b = add.inputs[1] if add.inputs[0] is out else add.inputs[0]
    width = m.inputs[1].const.shape[1]
    return add if b.is_const and b.const.shape == (width,) and len(b.users) == 1 else None


def _region(group, size):
    widths = {m.inputs[1].const.shape[1] for m in group}
    if len(widths) != 1 or next(iter(widths)) % size:
        return None
    width = widths.pop()
    biases = [_bias(m) for m in group]
    starts = [b.outputs[0] if b else m.outputs[0] for m, b in zip(group, biases)]
    if any(v.shape is None for v in starts):
        return None
    split = {id(v): len(v.shape) - 1 - len(v.shape) for v in starts}   # the split axis, counted from the end
    frontier, reshapes, rows, seen, pending = list(starts), [], [], set(), {}
    while frontier:
        v = frontier.pop()
        for u in v.users:
            if id(u) in seen:
                continue
            if u.op_type == "MatMul" and u.inputs[0] is v and _weight(u) is not None:
                if u.inputs[1].const.shape[0] != width or split[id(v)] != -1:
                    return None
                seen.add(id(u))
                rows.append(u)
                continue
            if u.op_type not in PASS:
                return None
            live = [i for i in u.inputs if i is not None and not i.is_const]
            if not all(id(i) in split for i in live):
                pending[id(u)] = u   # another input not reached yet: it comes back through that input
                continue
            out = _follow(u, [split[id(i)] for i in live], size)
            if out is None:
                return None
            if u.op_type == "Reshape":
                reshapes.append(u)
            seen.add(id(u))
            for o in u.outputs:
                split[id(o)] = out
                frontier.append(o)
    if any(k not in seen for k in pending):   # a region value meets an unsplit one (a residual): no split
        return None
    return (starts, biases, reshapes, rows) if rows else None


def _follow(u, axes: list[int], size: int) -> int | None:
    """The split axis (from the end) of u's output, given its region inputs' axes; None when u would mix
    the slices of different ranks (a reduction, softmax or contraction over the split axis, a constant
    operand spanning it, a Reshape that moves it)."""
    if len(set(axes)) != 1:
        return None
    a = axes[0]
    x = u.inputs[0]
    nd = len(x.shape) if x is not None and x.shape is not None else None
    if u.op_type == "Transpose":
        perm = u.attrs.get("perm")
        if perm is None or nd is None:
            return None
        return list(perm).index(a + nd) - nd
    if u.op_type == "Reshape":
        shape = u.inputs[1]
        if shape is None or not shape.is_const or nd is None or not _divisible_dim(shape.const, size):
            return None
        k = _split_axis(shape.const)
        return k - len(shape.const) if k == a + nd else None   # the dims before it are copied (0)
    if u.op_type == "Softmax":
        return a if nd is not None and int(u.attrs.get("axis", -1)) % nd != a + nd else None
    if u.op_type == "MatMul":   # two region values: the split must be a batch axis of both
        return a if nd is not None and a + nd < nd - 2 else None
    for c in u.inputs:          # elementwise: a constant operand must not span the split axis
        if c is not None and c.is_const and c.const.ndim >= -a and c.const.shape[c.const.ndim + a] != 1:
            return None
    return a


def _divisible_dim(shape: np.ndarray, size: int) -> bool:
    k = _split_axis(shape)
    return k is not None and shape[k] % size == 0


def _split_axis(shape: np.ndarray):
    """The first dim a Reshape gives (not 0: copied, not -1: inferred): heads, or the merged width."""
    return next((k for k, d in enumerate(shape.tolist()) if d > 0), None)


def _apply(graph, rank, size, group, biases, reshapes, rows, digest) -> None:
    for m, b in zip(group, biases):
        w = m.inputs[1].const
        c = w.shape[1] // size
        _set_const(graph, m, 1, w[:, rank * c:(rank + 1) * c])
        if b is not None:
            k = 1 if b.inputs[1].is_const else 0
            _set_const(graph, b, k, b.inputs[k].const[rank * c:(rank + 1) * c])
    for r in reshapes:
        shape = r.inputs[1].const.copy()
        shape[_split_axis(shape)] //= size
        _set_const(graph, r, 1, shape)
    for m in rows:
        w = m.inputs[1].const
        c = w.shape[0] // size
        _set_const(graph, m, 1, w[rank * c:(rank + 1) * c])
        out = m.outputs[0]
        reduced = graph.add_value(graph.fresh_name(f"{m.name}/all_reduce_out"), out.dtype, out.shape)
        graph.replace_all_uses_with(out, reduced)
        node = graph.add_node("HcomAllReduce", [out], [reduced.name], {
            "group": DEFAULT_GROUP, "reduction": "sum", "_model": digest},
            name=graph.fresh_name(f"{m.name}/all_reduce"), domain="ge", index=graph.nodes.index(m) + 1)
        assert node.outputs[0] is reduced


def _set_const(graph, node, i, array) -> None:
    """Input i of node becomes a fresh constant (the old one may be shared: split_heads feeds every layer)."""
    old = node.inputs[i]
    graph.set_input(node, i, graph.add_const(old.name + "/rank_slice", np.ascontiguousarray(array)))


def _model_digest(graph) -> str:
    h = hashlib.sha256()
    for v in sorted(graph.initializers, key=lambda v: v.name):
        h.update(v.name.encode())
        h.update(np.ascontiguousarray(v.const).reshape(-1).view(np.uint8))
    return h.hexdigest()[:32]

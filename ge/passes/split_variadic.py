"""split_variadic: a Sum / Max / Min / Mean / Concat with many inputs becomes nodes of at most ARITY inputs each.

Why: a kernel over star-args (binary.variadic, movement.concat) is compiled by Numba once per input count,
and the compile grows faster than linearly in it: a 1,000-input Concat's first run took 162 s and 2 GB, a
10,000-input Sum no result in 300 s (issue 46). Nodes of at most ARITY inputs compile once per arity class
(2..ARITY), whatever the graph's input counts.

Step 1: match Sum, Max, Min, Mean (ONNX domain) and Concat with more than ARITY inputs.
Step 2: Sum / Max / Min fold left in input order: t1 = op(x0..x7), t2 = op(t1, x8..x14), ...; the node keeps
        its output and reads the last partial result and the remaining inputs. The kernel computes
        ((x0 op x1) op x2) ..., so the fold performs the same operations in the same order: the same bits.
Step 3: Concat groups consecutive inputs by ARITY into Concats on the same axis, level by level, until the
        node reads at most ARITY (a tree: each level copies the data once, ~log_8 N copies).
Step 4: Mean of k inputs: the kernel sums as Sum does, then divides each element by k in the inputs' dtype
        (binary.variadic). So a Sum of the k inputs, folded as in Step 2, then the node becomes Div(sum, k):
        the same additions in the same order and the same one division, the same bits. (OpenVINO's Mean is
        that Sum and that division too; onnxruntime's sums in this order and multiplies by float32(1 / k):
        within one ulp, tests/reliability/test_rel_variadic.py.) A Mean whose dtype is not known is left
        whole.
Where the float order could change: nowhere. The pass runs in the LOWERING, after PRECISION: a node that
precision_mode stores in 16 bits is by then a float32 node between Casts (compute_in_float32), so its parts
add in float32 and only its output is rounded, as one node does. (Run before PRECISION, each part would be
a node of its own storing its partial result in 16 bits.)
Part nodes are named `<node>/part<k>`, unique among the graph's nodes (a profile or Options.no_reuse_ops
names them one by one).
Limits: a node with ARITY or fewer inputs is untouched.
"""
from __future__ import annotations

import itertools

import numpy as np

ARITY = 8
_FOLD = ("Sum", "Max", "Min")


def _namer(graph, node):
    """Fresh node names `<node>/part<k>`, unique among the graph's nodes and values."""
    taken = {n.name for n in graph.nodes}
    counter = itertools.count()

    def name() -> str:
        while True:
            candidate = f"{node.name}/part{next(counter)}"
            if candidate not in taken and candidate not in graph.values:
                taken.add(candidate)
                return candidate
    return name


def _read(graph, node, values) -> None:
    """The node reads `values` instead of its inputs."""
    for i in range(len(node.inputs) - 1, -1, -1):   # drop the old uses, then read the new ones
        graph.set_input(node, i, None)
    node.inputs = []
    for v in values:
        node.inputs.append(v)
        v.users.append(node)


def _fold(graph, node, name) -> None:
    ins, k = list(node.inputs), 0
    index = graph.nodes.index(node)
    acc = None
    while len(ins) - k > ARITY - (acc is not None):
        take = ARITY - (acc is not None)
        group = ([acc] if acc is not None else []) + ins[k:k + take]
        k += take
        part = graph.add_node(node.op_type, group, 1, {}, name(), index=index)
        index += 1
        acc = part.outputs[0]
    _read(graph, node, [acc] + ins[k:])


def _mean(graph, node, name) -> bool:
    dtype = node.inputs[0].dtype
    if dtype is None:
        return False
    total = graph.add_node("Sum", list(node.inputs), 1, {}, name(), index=graph.nodes.index(node))
    _fold(graph, total, name)
    _read(graph, node, [total.outputs[0], graph.add_const(f"{node.name}/count", np.array(len(node.inputs), dtype))])
    node.op_type = "Div"
    return True


def _tree(graph, node, name) -> None:
    ins = list(node.inputs)
    index = graph.nodes.index(node)
    while len(ins) > ARITY:
        out = []
        for g in range(0, len(ins), ARITY):
            group = ins[g:g + ARITY]
            if len(group) == 1:
                out.append(group[0])
                continue
            part = graph.add_node("Concat", group, 1, {"axis": node.attrs.get("axis", 1)}, name(), index=index)
            index += 1
            out.append(part.outputs[0])
        ins = out
    _read(graph, node, ins)


def split_variadic(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        # Step 1
        if node.domain != "" or len(node.inputs) <= ARITY or any(v is None for v in node.inputs):
            continue
        if node.op_type in _FOLD:
            _fold(graph, node, _namer(graph, node))       # Step 2
        elif node.op_type == "Concat":
            _tree(graph, node, _namer(graph, node))       # Step 3
        elif node.op_type == "Mean":
            if not _mean(graph, node, _namer(graph, node)):   # Step 4
                continue
        else:
            continue
        changed = True
    return changed

"""split_variadic: a Sum / Max / Min / Concat with many inputs becomes nodes of at most ARITY inputs each.

Why: a kernel over star-args (binary.variadic, movement.concat) is compiled by Numba once per input count,
and the compile grows faster than linearly in it: a 1,000-input Concat's first run took 162 s and 2 GB, a
10,000-input Sum no result in 300 s (issue 46). Nodes of at most ARITY inputs compile once per arity class
(2..ARITY), whatever the graph's input counts.

Step 1: match Sum, Max, Min (ONNX domain) and Concat with more than ARITY inputs.
Step 2: Sum / Max / Min fold left in input order: t1 = op(x0..x7), t2 = op(t1, x8..x14), ...; the node keeps
        its output and reads the last partial result and the remaining inputs. The kernel computes
        ((x0 op x1) op x2) ..., so the fold performs the same operations in the same order: the same bits.
Step 3: Concat groups consecutive inputs by ARITY into Concats on the same axis, level by level, until the
        node reads at most ARITY (a tree: each level copies the data once, ~log_8 N copies).
Limits: Mean stays as it is (its 1/k would be a separate Div: same bits only where the division is the
same); a node with ARITY or fewer inputs is untouched.
"""
from __future__ import annotations

ARITY = 8
_FOLD = ("Sum", "Max", "Min")


def _fold(graph, node) -> None:
    ins, k = list(node.inputs), 0
    index = graph.nodes.index(node)
    acc = None
    while len(ins) - k > ARITY - (acc is not None):
        take = ARITY - (acc is not None)
        group = ([acc] if acc is not None else []) + ins[k:k + take]
        k += take
        part = graph.add_node(node.op_type, group, 1, {}, graph.fresh_name(f"{node.name}/part"), index=index)
        index += 1
        acc = part.outputs[0]
    rest = [acc] + ins[k:]
    for i in range(len(node.inputs) - 1, -1, -1):   # drop the old uses, then read the rest
        graph.set_input(node, i, None)
    node.inputs = []
    for v in rest:
        node.inputs.append(v)
        v.users.append(node)


def _tree(graph, node) -> None:
    ins = list(node.inputs)
    index = graph.nodes.index(node)
    level = 0
    while len(ins) > ARITY:
        out = []
        for g in range(0, len(ins), ARITY):
            group = ins[g:g + ARITY]
            if len(group) == 1:
                out.append(group[0])
                continue
            part = graph.add_node("Concat", group, 1, {"axis": node.attrs.get("axis", 1)},
                                  graph.fresh_name(f"{node.name}/part{level}"), index=index)
            index += 1
            out.append(part.outputs[0])
        ins, level = out, level + 1
    for i in range(len(node.inputs) - 1, -1, -1):
        graph.set_input(node, i, None)
    node.inputs = []
    for v in ins:
        node.inputs.append(v)
        v.users.append(node)


def split_variadic(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        # Step 1
        if node.domain != "" or len(node.inputs) <= ARITY or any(v is None for v in node.inputs):
            continue
        if node.op_type in _FOLD:
            _fold(graph, node)       # Step 2
        elif node.op_type == "Concat":
            _tree(graph, node)       # Step 3
        else:
            continue
        changed = True
    return changed

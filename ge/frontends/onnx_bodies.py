"""ONNX subgraphs (If/Loop/Scan bodies) and non-tensor types for the ONNX frontend.

- `free_names(graph)`: names a graph's nodes (and nested bodies) read without defining them: the outer
  values a body captures (ONNX scoping: a body sees every name of its enclosing graphs).
- `value_kind(type_proto)`: ("tensor" | "sequence" | "optional" | "optional_sequence" | "map(K)" |
  "seq(map(K))", element TypeProto): a map (ONNX-ML's ZipMap and DictVectorizer) has its key type K (int64
  or string) in its kind and its value type as the element.
- `check_bodies(node, where)`: a control node's bodies against the op's signature (input and output counts),
  so a malformed model is a ModelLoadError naming the node, not a failure deep in a run.
"""
from __future__ import annotations

from ..errors import ModelLoadError


def free_names(g) -> set[str]:
    defined = {x.name for x in g.input} | {t.name for t in g.initializer} | {""}
    read: set[str] = set()
    for n in g.node:
        read.update(n.input)
        for a in n.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                read |= free_names(sub)
        defined.update(n.output)
    read.update(o.name for o in g.output)
    return read - defined


def node_free_names(n) -> set[str]:
    out: set[str] = set()
    for a in n.attribute:
        for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            out |= free_names(sub)
    return out


def value_kind(tp):
    """(kind, tensor TypeProto of the element or None) of a TypeProto; ("", None) when not representable."""
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        return "tensor", tp
    if which == "sequence_type" and tp.sequence_type.elem_type.WhichOneof("value") == "map_type":
        kind, elem = value_kind(tp.sequence_type.elem_type)
        return (f"seq({kind})", elem) if kind else ("", None)
    if which == "sequence_type":
        kind, elem = value_kind(tp.sequence_type.elem_type)
        return ("sequence", elem) if kind == "tensor" else ("", None)
    if which == "map_type":
        key = {7: "int64", 8: "string"}.get(tp.map_type.key_type)
        kind, elem = value_kind(tp.map_type.value_type)
        return (f"map({key})", elem) if key and kind == "tensor" else ("", None)
    if which == "optional_type":
        kind, elem = value_kind(tp.optional_type.elem_type)
        return ({"tensor": "optional", "sequence": "optional_sequence"}.get(kind, ""), elem)
    return ("", None) if which else ("tensor", None)


def check_bodies(node, opset: int, where: str) -> None:
    """If: both branches give the node's outputs. Loop: body (iter, cond, N states) -> (cond, N states,
    K scans). Scan: body (N states, M scan inputs) -> (N states, K scans)."""
    b = node.bodies
    n_in, n_out = len(node.formal_inputs), len(node.outputs)

    def bad(msg):
        raise ModelLoadError(f"{where}: {node.op_type} node '{node.name}': {msg}")
    if node.op_type == "If":
        for attr in ("then_branch", "else_branch"):
            if attr not in b:
                bad(f"has no '{attr}' body")
            if len(b[attr].outputs) != n_out:
                bad(f"its {attr} gives {len(b[attr].outputs)} outputs, the node has {n_out}")
    elif node.op_type == "Loop":
        body = b.get("body")
        if body is None:
            bad("has no 'body'")
        n_states = n_in - 2
        if len(body.inputs) != 2 + n_states:
            bad(f"its body takes {len(body.inputs)} inputs; a Loop with {n_states} carried values needs "
                f"{2 + n_states} (iteration number, condition, the carried values)")
        if len(body.outputs) < 1 + n_states or n_out != len(body.outputs) - 1:
            bad(f"its body gives {len(body.outputs)} outputs (condition, {n_states} carried values, then scan "
                f"outputs), which does not match the node's {n_out} outputs ({n_states} carried values and "
                f"{len(body.outputs) - 1 - n_states} scan outputs expected)")
    elif node.op_type == "SequenceMap":
        body = b.get("body")
        if body is None or len(body.inputs) != n_in or len(body.outputs) != n_out:
            bad(f"its body must take its {n_in} inputs and give its {n_out} outputs")
    elif node.op_type == "Scan":
        body = b.get("body")
        if body is None:
            bad("has no 'body'")
        m = int(node.attrs.get("num_scan_inputs", 0))
        first = 1 if opset < 9 else 0   # Scan-8: sequence_lens first
        n_states = n_in - first - m
        if n_states < 0 or len(body.inputs) != n_states + m:
            bad(f"its body takes {len(body.inputs)} inputs; {n_states} states and {m} scan inputs need "
                f"{n_states + m}")
        if len(body.outputs) != n_out or n_out < n_states:
            bad(f"its body gives {len(body.outputs)} outputs, the node has {n_out} ({n_states} states first)")

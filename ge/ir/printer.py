"""One printed form for dumps, errors and golden tests:  %y:f32[1,64,56,56] = Conv[strides=[1,1]](%x, %w)"""
from __future__ import annotations

import numpy as np

from .dtypes import short


def format_type(v) -> str:
    dims = "?" if v.shape is None else ",".join(str(d) for d in v.shape)
    kind = getattr(v, "kind", "tensor")
    if kind == "tensor":
        return f"{short(v.dtype)}[{dims}]"
    if "map(" in kind:   # map(K) / seq(map(K)): ONNX-ML's maps, key type K
        return kind.replace("(", "<").replace(")", f",{short(v.dtype)}>", 1).replace(")", ">")
    return {"sequence": "seq<{}>", "optional": "opt<{}>", "optional_sequence": "opt<seq<{}>>"}[kind].format(
        short(v.dtype))


def format_value(v) -> str:
    return f"%{v.name}:{format_type(v)}"


def _format_attr(a) -> str:
    if isinstance(a, np.ndarray):
        return f"tensor<{short(a.dtype)}[{','.join(map(str, a.shape))}]>"
    if isinstance(a, (list, tuple)):
        return "[" + ",".join(_format_attr(x) for x in a) + "]"
    if isinstance(a, float):
        return f"{a:g}"
    if isinstance(a, bytes):
        return repr(a.decode(errors="replace"))
    if hasattr(a, "nodes"):  # subgraph
        return f"graph<{len(a.nodes)} nodes>"
    return repr(a) if isinstance(a, str) else str(a)


def format_node(n) -> str:
    outs = ", ".join(format_value(v) for v in n.outputs)
    attrs = ",".join(f"{k}={_format_attr(v)}" for k, v in sorted(n.attrs.items()))
    ins = ", ".join("None" if v is None else f"%{v.name}" for v in n.inputs)
    op = f"{n.domain}::{n.op_type}" if n.domain else n.op_type
    return f"{outs} = {op}{'[' + attrs + ']' if attrs else ''}({ins})  # {n.name}"


def format_graph(g, max_consts: int = 20, indent: str = "") -> str:
    lines = [f"graph {g.name} (opsets {g.opsets}):"]
    lines += [f"  input {format_value(v)}" for v in g.inputs]
    lines += [f"  capture {format_value(v)}" for v in getattr(g, "captures", ())]
    consts = g.initializers
    lines += [f"  const {format_value(v)}" for v in consts[:max_consts]]
    if len(consts) > max_consts:
        lines.append(f"  ... {len(consts) - max_consts} more constants")
    for n in g.nodes:
        lines.append(f"  {format_node(n)}")
        for attr, body in getattr(n, "bodies", {}).items():  # a body prints under its node, indented
            lines.append(f"    {attr}: " + format_graph(body, max_consts, "    ").lstrip())
    lines.append("  return " + ", ".join(f"%{v.name}" for v in g.outputs))
    return "\n".join(indent + line if k else line for k, line in enumerate(lines))

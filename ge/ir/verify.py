"""verify(graph): ownership, order, single definition, dangling uses. Run after every pass in tests.

Bodies of control nodes are verified too: a body reads only its own values and its captures, and the
node lists one outer value per capture, of the capture's kind and dtype, as its last inputs.
"""
from __future__ import annotations

from ..errors import GEError


class VerifyError(GEError):
    """The graph breaks an IR invariant; the message says which and ends with the printed graph."""


def verify(graph) -> None:
    problems = _problems(graph, "")
    if problems:
        raise VerifyError("graph verification failed:\n  " + "\n  ".join(problems[:20])
                          + "\n" + str(graph))


def _problems(graph, where: str) -> list[str]:
    problems: list[str] = []
    defined = {id(v) for v in graph.inputs} | {id(v) for v in graph.initializers} | \
        {id(v) for v in graph.captures}
    names: set[str] = set()
    for node in graph.nodes:
        if node.name in names:
            problems.append(f"{where}node name '{node.name}' is used twice: give each node its own name")
        names.add(node.name)
        for v in node.inputs:
            if v is None:
                continue
            if graph.values.get(v.name) is not v:
                problems.append(f"{where}node '{node.name}' reads '{v.name}', which the graph does not own")
            elif id(v) not in defined:
                problems.append(f"{where}node '{node.name}' reads '{v.name}' before it is defined: reorder nodes")
            if node not in v.users:
                problems.append(f"{where}'{v.name}' does not list reader '{node.name}': use Graph.set_input")
        for v in node.outputs:
            if v.producer is not node:
                problems.append(f"{where}'{v.name}' does not name '{node.name}' as its producer")
            if id(v) in defined:
                problems.append(f"{where}'{v.name}' is defined twice (again by '{node.name}')")
            defined.add(id(v))
        if node.bodies:
            problems += _captures(node, where)
    for v in graph.values.values():
        for u in v.users:
            if u not in graph.nodes:
                problems.append(f"{where}'{v.name}' lists reader '{u.name}', which is not in the graph")
    for v in graph.outputs:
        if id(v) not in defined:
            problems.append(f"{where}graph output '{v.name}' is never defined")
    return problems


def _captures(node, where: str) -> list[str]:
    """The node's last inputs are the outer values its bodies capture, one per capture, in body order."""
    problems = []
    n = node.n_captured
    if n > len(node.inputs):
        return [f"{where}{node.op_type} node '{node.name}': its bodies capture {n} values but it has "
                f"{len(node.inputs)} inputs: add the captured outer values as its last inputs"]
    outer = iter(node.inputs[len(node.inputs) - n:])
    for attr, body in node.bodies.items():
        for inner in body.captures:
            v = next(outer)
            if v is None or v.kind != inner.kind or (v.dtype is not None and inner.dtype is not None
                                                     and v.dtype != inner.dtype):
                problems.append(f"{where}{node.op_type} node '{node.name}': {attr} captures '{inner.name}' "
                                f"({inner.kind} {inner.dtype}) but the node passes "
                                f"{'nothing' if v is None else repr(v.name) + f' ({v.kind} {v.dtype})'}")
        problems += _problems(body, f"{where}{node.name}.{attr}: ")
    return problems

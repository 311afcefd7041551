"""verify(graph): ownership, order, single definition, dangling uses. Run after every pass in tests."""
from __future__ import annotations

from ..errors import GEError


class VerifyError(GEError):
    """The graph breaks an IR invariant; the message says which and ends with the printed graph."""


def verify(graph) -> None:
    problems: list[str] = []
    defined = {id(v) for v in graph.inputs} | {id(v) for v in graph.initializers}
    names: set[str] = set()
    for node in graph.nodes:
        if node.name in names:
            problems.append(f"node name '{node.name}' is used twice: give each node its own name")
        names.add(node.name)
        for v in node.inputs:
            if v is None:
                continue
            if graph.values.get(v.name) is not v:
                problems.append(f"node '{node.name}' reads '{v.name}', which the graph does not own")
            elif id(v) not in defined:
                problems.append(f"node '{node.name}' reads '{v.name}' before it is defined: reorder nodes")
            if node not in v.users:
                problems.append(f"'{v.name}' does not list reader '{node.name}': use Graph.set_input")
        for v in node.outputs:
            if v.producer is not node:
                problems.append(f"'{v.name}' does not name '{node.name}' as its producer")
            if id(v) in defined:
                problems.append(f"'{v.name}' is defined twice (again by '{node.name}')")
            defined.add(id(v))
    for v in graph.values.values():
        for u in v.users:
            if u not in graph.nodes:
                problems.append(f"'{v.name}' lists reader '{u.name}', which is not in the graph")
    for v in graph.outputs:
        if id(v) not in defined:
            problems.append(f"graph output '{v.name}' is never defined")
    if problems:
        raise VerifyError("graph verification failed:\n  " + "\n  ".join(problems[:20])
                          + "\n" + str(graph))

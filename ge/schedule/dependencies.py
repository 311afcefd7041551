"""The data edges of an execution order: per position, the positions of its producers and consumers."""
from __future__ import annotations

from ..errors import GEError


def dependencies(order) -> tuple[list[list[int]], list[list[int]]]:
    """(preds, succs): per position in `order` (ir Nodes), the positions of its producers / consumers (data
    edges), each list sorted and without duplicates."""
    pos = {id(n): i for i, n in enumerate(order)}
    preds = [sorted({pos[id(v.producer)] for v in n.inputs
                     if v is not None and v.producer is not None and id(v.producer) in pos}) for n in order]
    succs: list[list[int]] = [[] for _ in order]
    for i, ps in enumerate(preds):
        for p in ps:
            if p >= i:
                raise GEError(f"order is not topological: '{order[p].name}' runs after its consumer "
                              f"'{order[i].name}'")
            succs[p].append(i)
    return preds, succs

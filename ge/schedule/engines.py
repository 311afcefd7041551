"""Engine per node, and the dependency lists of an execution order (input to streams and events).

The engine comes from the op type for HCCL (collectives) and DVPP (image pre-processing), else from the
kernel (`OpKernel.engine`: AICORE or AICPU), else AICORE. A node whose kernel declares an alias and whose
prepare gives no task at its static shapes (Reshape, Flatten, Identity, Squeeze...) is GE_LOCAL: it produces
no task and rides on a neighbour's stream (GE's skip_assign_stream engines).
"""
from __future__ import annotations

from ..errors import GEError
from ..kernels.bind import node_context, node_kernel, static_spec
from ..kernels.registry import is_registered
from ..npu.engines import GE_LOCAL, engine_for_op


def node_engine(graph, node) -> str:
    kernel = _kernel(graph, node)
    engine = engine_for_op(node.op_type, kernel.engine if kernel else None)
    if kernel is not None and kernel.alias is not None and _no_task(graph, node, kernel):
        return GE_LOCAL
    return engine


def assign_engines(graph, order) -> list[str]:
    """The engine of each node of `order`."""
    return [node_engine(graph, n) for n in order]


def dependencies(order) -> tuple[list[list[int]], list[list[int]]]:
    """(preds, succs): per position in `order`, the positions of its producers / consumers (data edges),
    each list sorted and without duplicates."""
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


def _kernel(graph, node):
    if not is_registered(node.op_type, node.domain):
        return None
    try:
        return node_kernel(graph, node)
    except GEError:
        return None


def _no_task(graph, node, kernel) -> bool:
    specs = [static_spec(v) for v in node.inputs]
    if any(v is not None and s is None for v, s in zip(node.inputs, specs)):
        return False   # dynamic: known only at run time, so keep it a task
    try:
        ctx = node_context(graph, node, kernel, specs)
        ctx.outputs = kernel.infer(ctx)
        return kernel.prepare(ctx) is None
    except Exception:  # noqa: BLE001 - a node that cannot be prepared statically is treated as a task
        return False

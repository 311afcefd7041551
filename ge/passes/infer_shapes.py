"""infer_shapes: static dtypes and shapes for every value, from the kernels' own infer functions.

Walks nodes in order. Where all inputs are static, the kernel's infer sets the outputs (it wins over
onnx.shape_inference, since it is what will run). Where an input is symbolic, or a shape depends on a
value known only at run time, the outputs keep the frontend's (possibly symbolic) shapes: the node is
dynamic and runtime_v2 infers it again per run. A host op that runs as a task (string and ONNX-ML ops,
kernels/host_tasks.py) gets the output shapes its inputs' shapes decide, so the nodes after it bind tasks. Also the place an unsupported op is first reported.
`infer_node` is the step for one node: fold_constants runs it on every node it does not fold, so a shape
made static by a fold reaches the next Shape node in the same sweep.
"""
from __future__ import annotations

from ..kernels import host_tasks
from ..kernels.bind import node_context, node_kernel, node_opset, static_spec
from ..kernels.registry import UnknownValueError


def infer_node(graph, node) -> bool:
    """Set the node's output dtypes and shapes from its kernel's infer when its inputs are static; changed?"""
    kernel = node_kernel(graph, node)
    specs = [static_spec(v) for v in node.inputs]
    if any(v is not None and s is None for v, s in zip(node.inputs, specs)):
        return False
    if host_tasks.is_host_task(kernel):   # a host op: the shapes its inputs' shapes decide (host_tasks.py)
        return _host_shapes(graph, node, kernel, specs)
    ctx = node_context(graph, node, kernel, specs)
    try:
        outs = kernel.infer(ctx)
    except UnknownValueError:
        return False
    changed = False
    for v, spec in zip(node.outputs, outs):
        if v.shape != spec.shape or v.dtype != spec.dtype:
            v.shape, v.dtype, changed = spec.shape, spec.dtype, True
    return changed


def _host_shapes(graph, node, kernel, specs) -> bool:
    """A host-task node's static output shapes (dtypes stay the frontend's); changed?"""
    values = [v.const if v is not None and v.is_const else None for v in node.inputs]
    shapes = host_tasks.output_shapes(node, kernel, specs, values, node_opset(graph, node))
    changed = False
    for v, shape in zip(node.outputs, shapes):
        if (v is not None and shape is not None and v.is_tensor and v.dtype is not None and v.shape != shape
                and all(isinstance(d, int) and d >= 0 for d in shape)):
            v.shape, changed = tuple(shape), True
    return changed


def infer_shapes(graph) -> bool:
    changed = False
    for node in graph.nodes:
        changed |= infer_node(graph, node)
    return changed

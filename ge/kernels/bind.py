"""Bind an IR node to its kernel: lookup by the graph's opset, and the KernelContext infer/prepare see."""
from __future__ import annotations

import numpy as np

from .registry import KernelContext, OpKernel, TensorSpec, lookup


def node_opset(graph, node) -> int:
    return graph.opsets.get(node.domain, 1) if node.domain else graph.opset


def node_kernel(graph, node) -> OpKernel:
    return lookup(node.op_type, node.domain, node_opset(graph, node), node.name)


def static_spec(v) -> TensorSpec | None:
    """The TensorSpec of a value whose dtype and shape are fully known, else None."""
    if v is None or v.dtype is None or not v.is_static:
        return None
    return TensorSpec(v.shape, v.dtype)


def node_context(graph, node, kernel: OpKernel, specs=None, values=None) -> KernelContext:
    """Context from the IR (static specs, constant values) unless specs/values are given (run time)."""
    if specs is None:
        specs = [static_spec(v) for v in node.inputs]
    if values is None:
        values = [v.const if (v is not None and i in kernel.value_inputs) else None
                  for i, v in enumerate(node.inputs)]
    return KernelContext(node.op_type, node.name, node.attrs, list(specs), list(values),
                         node_opset(graph, node), n_outputs=len(node.outputs))


def values_for(kernel: OpKernel, arrays: list) -> list[np.ndarray | None]:
    """The value inputs a kernel reads, from run-time arrays."""
    return [a if (i in kernel.value_inputs and a is not None) else None for i, a in enumerate(arrays)]

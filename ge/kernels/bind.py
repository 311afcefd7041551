"""Bind a node to its kernel: lookup by opset, the KernelContext infer/prepare see, and the one call of
infer + prepare (`OpKernel.bind`) that the compiler, offline loading and runtime_v2's dynamic nodes share."""
from __future__ import annotations

from ..ir.dtypes import STRING
from .registry import KernelContext, Launch, OpKernel, TensorSpec, lookup
from .strings import on_strings


def node_opset(graph, node) -> int:
    return graph.opsets.get(node.domain, 1) if node.domain else graph.opset


def node_kernel(graph, node) -> OpKernel:
    """The node's kernel; a host function instead when a value of the node is a string tensor (strings.py)."""
    opset = node_opset(graph, node)
    kernel = lookup(node.op_type, node.domain, opset, node.name)
    if kernel.host is None and any(v is not None and v.dtype == STRING for v in (*node.inputs, *node.outputs)):
        return on_strings(kernel, node.name, opset)
    return kernel


def static_spec(v) -> TensorSpec | None:
    """The TensorSpec of a value whose dtype and shape are fully known, else None."""
    if v is None or v.dtype is None or not v.is_static:
        return None
    return TensorSpec(v.shape, v.dtype)


def node_context(graph, node, kernel: OpKernel, specs=None, values=None, cores: int = 1) -> KernelContext:
    """Context from the IR (static specs, constant values) unless specs/values are given (run time)."""
    if specs is None:
        specs = [static_spec(v) for v in node.inputs]
    if values is None:
        values = [v.const if (v is not None and i in kernel.value_inputs) else None
                  for i, v in enumerate(node.inputs)]
    return KernelContext(node.op_type, node.name, node.attrs, list(specs), list(values),
                         node_opset(graph, node), n_outputs=len(node.outputs), cores=cores)


def prepare_launch(kernel: OpKernel, op_type: str, name: str, attrs, specs, values, opset: int, n_outputs: int,
                   cores: int = 1) -> tuple[list[TensorSpec], Launch | None]:
    """(output specs, launch) of a node known by its parts (a stored plan, a run-time shape)."""
    ctx = KernelContext(op_type, name, dict(attrs), list(specs), list(values), opset, n_outputs=n_outputs,
                        cores=cores)
    launch = kernel.bind(ctx)
    return ctx.outputs, launch


def retile(plan, cores: int) -> list[int]:
    """Per step of a plan, the block_dim its kernel's tiling gives on a device of `cores` AI cores (0 for a
    node with no task or shapes known only at run time): the plan as another device would run it."""
    out = []
    for n in plan.nodes:
        if n.launch is None or n.no_task:
            out.append(0)
            continue
        specs = [None if t < 0 else TensorSpec(plan.tensors[t].shape, plan.tensors[t].dtype) for t in n.inputs]
        values = [plan.constants.get(t) if (t >= 0 and k in n.kernel.value_inputs) else None
                  for k, t in enumerate(n.inputs)]
        _, launch = prepare_launch(n.kernel, n.op_type, n.name, n.attrs, specs, values, n.opset, len(n.outputs),
                                   cores)
        out.append(launch.block_dim if launch is not None else 0)
    return out

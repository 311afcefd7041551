"""fold_constants: run nodes whose inputs are all constant at compile time, once, with ge's own kernels
(integer/bool ones on the host CPU engine's numpy twins, kernels/host_cpu.py: the same bits, no compile).

Also folds Shape and Size of statically shaped values (their inputs need not be constant). The light
models build every weight with ConstantOfShape: after this pass none of those runs at inference.
Nodes are visited in order, so chains of constants fold in one sweep; a node that does not fold has its
shapes inferred on the spot (infer_shapes.infer_node), so the exporters' shape arithmetic (Shape -> Gather ->
Concat -> Reshape, layer after layer) folds through the whole graph in one sweep rather than one Reshape a
pipeline round (a 4-layer GPT-2 has ~50 of them: MAX_FOLD_ROUNDS left most of it dynamic). A result larger than the modelled
device memory is refused (DeviceMemoryError naming the node) before anything is allocated.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import DeviceMemoryError
from ..kernels import strings
from ..kernels.bind import node_context, node_kernel, static_spec
from ..kernels.control import HostCall
from ..kernels.host_cpu import fold_on_host
from ..kernels.registry import run_kernel
from .infer_shapes import infer_node

NEVER_FOLD = {"HcomAllReduce", "HcomAllGather", "HcomBroadcast", "HcomReduceScatter",  # collectives: run on a group
              "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
              "Bernoulli"}


def _shape_value(node, spec):
    """Shape / Size of a statically shaped input, without materializing the input."""
    if node.op_type == "Size":
        return np.array(spec.size, np.int64)
    rank = len(spec.shape)
    start, end = node.attrs.get("start", 0), node.attrs.get("end", rank)
    start, end = (min(max(x + rank if x < 0 else x, 0), rank) for x in (start, end))
    return np.array(spec.shape[start:end], np.int64)


def _check_fits(node, ctx, kernel, capacity: int) -> None:
    for spec in kernel.infer(ctx):
        nbytes = math.prod(spec.shape) * spec.dtype.itemsize  # Python ints: no overflow at 2**80
        if nbytes > capacity:
            raise DeviceMemoryError(nbytes, capacity, 0, f"the constant {node.op_type} node '{node.name}' "
                                    "would fold into")


def fold_constants(graph, options=None) -> bool:
    capacity = options.device_memory_bytes if options is not None else math.inf
    changed = False
    for node in list(graph.nodes):
        if _fold(graph, node, capacity):
            changed = True
        else:
            changed |= infer_node(graph, node)
    return changed


def _fold(graph, node, capacity) -> bool:
    """Fold the node into constants if it can be; folded?"""
    if node.op_type in NEVER_FOLD or node.domain not in ("", "ge"):
        return False
    if node.op_type in ("Shape", "Size") and static_spec(node.inputs[0]) is not None:
        graph.fold_node(node, [_shape_value(node, static_spec(node.inputs[0]))])
        return True
    if not all(v is None or v.is_const for v in node.inputs):  # Constant has no inputs at all
        return False
    kernel = node_kernel(graph, node)
    if kernel.host is not None and strings.foldable(kernel):   # string ops: pure host functions
        call = HostCall(node.op_type, node.name, node.attrs, node_context(graph, node, kernel).opset,
                        tuple(v.dtype for v in node.outputs), {})
        graph.fold_node(node, kernel.host(call, [None if v is None else v.const for v in node.inputs]))
        return True
    if kernel.host is not None:  # control flow and sequences: opaque (fold_if takes constant Ifs)
        return False
    arrays = [None if v is None else v.const for v in node.inputs]
    ctx = node_context(graph, node, kernel, values=arrays)
    _check_fits(node, ctx, kernel, capacity)
    # integer/bool shape arithmetic on the host CPU engine's numpy twins (GE folds with its host CPU engine
    # too): no int64/bool kernel compiled to fold a few numbers; the same bits
    graph.fold_node(node, fold_on_host(kernel, ctx, arrays) or run_kernel(kernel, ctx, arrays))
    return True

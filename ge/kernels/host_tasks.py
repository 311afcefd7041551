"""Host ops that run as tasks of a static plan (GE's AICPU tasks in a sunk model), and their output shapes.

The string ops, the data-movement ops on strings (strings.py) and the ONNX-ML ops (ml.py, ml_svm.py) are
host functions over values: they hold no state, take no bodies, and most give outputs whose shapes follow
from their inputs' shapes. runtime_v1 runs such a node as a host task in its stream's program (runtime_v1/
host.py), with string tensors, sequences and maps in a side table of Python values and numeric tensors in
its arena; runtime_v2 runs it host-driven.

`output_shapes` is the compile-time half: the static shapes of a host node's outputs from its inputs' static
shapes (None where a shape depends on the data: StringSplit's width, StringNormalizer's stopwords, a
sequence). infer_shapes sets them, so the numeric nodes after a host op bind their launches (tasks) instead
of staying dynamic. Rules:
  - ONNX-ML ops: ml.output_types (rows from the input, columns from the attributes); the encoders and the
    elementwise ones keep their input's shape;
  - string ops: RegexFullMatch keeps the shape, StringConcat broadcasts, StringSplit's counts keep it;
  - data movement and compares on strings: the op's own numeric infer (the shape rule is the same; a rule
    that checks dtypes refuses the object dtype and the shape stays unknown).
A host function's result is checked against these shapes when it runs (ge.kernels.control.check_value).
"""
from __future__ import annotations

import numpy as np

from . import ml, ml_svm, strings
from .registry import KernelContext, OpKernel, lookup

_MODULES = frozenset(m.__name__ for m in (ml, ml_svm, strings))
_SAME_SHAPE = frozenset({"LabelEncoder", "CategoryMapper", "Imputer", "Scaler", "Normalizer", "Binarizer",
                         "RegexFullMatch"})


def is_host_task(kernel: OpKernel) -> bool:
    """A host op runtime_v1 runs as a task: a string, strings-generic or ONNX-ML host function (module doc)."""
    return kernel.host is not None and getattr(kernel.host, "__module__", "") in _MODULES


def output_shapes(node, kernel: OpKernel, specs, values, opset: int) -> list:
    """Per output of a host-task node: its static shape (a tuple of ints) or None (module doc)."""
    n_out = len(node.outputs)
    shape = tuple(specs[0].shape) if specs and specs[0] is not None else None
    if kernel.host in strings.GENERIC.values():
        return _numeric_rule(node, specs, values, opset, n_out)
    if node.op_type in _SAME_SHAPE:
        return [shape] * n_out
    if node.op_type == "StringConcat":
        try:
            return [tuple(np.broadcast_shapes(*(s.shape for s in specs)))]
        except ValueError:
            return [None]
    if node.op_type == "StringSplit":
        return [None, shape]
    types = ml.output_types(node.op_type, node.attrs, specs) if node.domain == ml.ML else None
    return [t[1] if t[2] == "tensor" else None for t in types] if types else [None] * n_out


def _numeric_rule(node, specs, values, opset: int, n_out: int) -> list:
    """The shapes the op's numeric kernel infers for these input shapes (None when it declines)."""
    try:
        kernel = lookup(node.op_type, node.domain, opset, node.name)
        ctx = KernelContext(node.op_type, node.name, node.attrs, list(specs),
                            [v if i in kernel.value_inputs else None for i, v in enumerate(values)],
                            opset, n_outputs=n_out)
        return [tuple(s.shape) for s in kernel.infer(ctx)]
    except Exception:  # noqa: BLE001 - a rule that checks dtypes or needs a value: the shape stays unknown
        return [None] * n_out

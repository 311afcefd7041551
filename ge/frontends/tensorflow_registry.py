"""The TensorFlow op registry: converters by TF op name (tensorflow_ops.py and tensorflow_shape_ops.py fill it).

A converter is `fn(b: Builder, *inputs: Value) -> Value | list[Value | None]` (the TF node's outputs by
port); it reads attributes with `b.attr`, constant inputs with `b.value_of`, and adds nodes with `b.op`.
NHWC ops go through `b.spatial` (NCHW between transposes) or `b.pointwise` (follows the NCHW layout of
its inputs); see tensorflow.py.
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedOpError

INT64_MAX = np.iinfo(np.int64).max
CONVERTERS: dict[str, callable] = {}


def tf_op(*names):
    def deco(fn):
        for name in names:
            CONVERTERS[name] = fn
        return fn
    return deco


def convert(b, n, ins, model_name: str) -> list:
    """The TF node's outputs by port (None where a port is not produced)."""
    fn = CONVERTERS.get(n.op)
    if fn is None:
        err = UnsupportedOpError(n.op, "tensorflow", 0, n.name, sorted(CONVERTERS))
        err.args = (f"{model_name}: unsupported TensorFlow op {n.op} at node '{n.name}'; mapped ops: "
                    f"{', '.join(sorted(CONVERTERS))}",)
        raise err
    out = fn(b, *ins)
    return out if isinstance(out, (list, tuple)) else [out]

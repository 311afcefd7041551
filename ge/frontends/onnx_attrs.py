"""ONNX attributes and tensors -> plain Python values (ints, floats, str, lists, ndarrays, subgraphs)."""
from __future__ import annotations

import numpy as np
from onnx import AttributeProto, TensorProto, numpy_helper

from ..errors import ModelLoadError
from ..ir.dtypes import as_strings


def tensor_to_array(t, base_dir: str | None = None) -> np.ndarray:
    """A TensorProto as an ndarray; external data is read by the caller (see onnx.load_external)."""
    if any(d < 0 for d in t.dims):   # numpy's reshape would read any negative dim as "the rest": [-4] as [4]
        raise ModelLoadError(f"tensor '{t.name}' declares dims {list(t.dims)[:8]}: a negative dimension")
    try:
        a = np.array(numpy_helper.to_array(t, base_dir=base_dir or ""))
        return as_strings(a) if t.data_type == TensorProto.STRING else a   # ONNX's bytes as str
    except Exception as e:  # noqa: BLE001 - any decode failure is a bad model
        raise ModelLoadError(f"cannot decode tensor '{t.name}': {e}") from e


def attribute_value(a, subgraph=None):
    """Python value of one AttributeProto; `subgraph(GraphProto)` converts graph attributes."""
    T = AttributeProto
    if a.type == T.FLOAT:
        return float(a.f)
    if a.type == T.INT:
        return int(a.i)
    if a.type == T.STRING:
        return a.s.decode("utf-8", errors="replace")
    if a.type == T.TENSOR:
        return tensor_to_array(a.t)
    if a.type == T.FLOATS:
        return [float(x) for x in a.floats]
    if a.type == T.INTS:
        return [int(x) for x in a.ints]
    if a.type == T.STRINGS:
        return [s.decode("utf-8", errors="replace") for s in a.strings]
    if a.type == T.TENSORS:
        return [tensor_to_array(t) for t in a.tensors]
    if a.type == T.GRAPH:
        return subgraph(a.g) if subgraph else a.g
    if a.type == T.GRAPHS:
        return [subgraph(g) if subgraph else g for g in a.graphs]
    if a.type == T.TYPE_PROTO:  # Optional's element type as "kind:dtype", e.g. "sequence:float32"
        from ..ir.dtypes import from_onnx
        from .onnx_bodies import value_kind
        kind, tp = value_kind(a.tp)
        if kind not in ("tensor", "sequence") or tp is None:
            raise ModelLoadError(f"attribute '{a.name}': type {a.tp.WhichOneof('value')} is unsupported")
        return f"{kind}:{from_onnx(tp.tensor_type.elem_type, 'attribute ' + a.name).name}"
    raise ModelLoadError(f"attribute '{a.name}' has an unsupported type {a.type}")


def node_attributes(node, subgraph=None) -> dict:
    return {a.name: attribute_value(a, subgraph) for a in node.attribute}

"""The ONNX model a session compiles, after what SessionOptions asks of it before loading.

onnxruntime applies free dimension overrides to the graph's inputs (its FreeDimensionOverrideTransformer:
a dim whose dim_param, or denotation, is named takes the given size) and takes initializers from the options
in place of the model's. ge does the same on a copy of the ModelProto before its import, so the compiled plan
has the static shapes (ge's input shapes: the symbol's size everywhere it appears, ge/compiler.py
bind_input_shapes) and the given weights. A model with none of these options is passed through untouched.
"""
from __future__ import annotations

import onnx
from onnx import numpy_helper

from ..errors import InputError
from ..frontends.onnx import load_model
from ..offline import is_offline_model


def prepared(model, options) -> object:
    """`model` itself, or a ModelProto with options' free dims and initializers applied."""
    files = getattr(options, "external_files", None)
    if not (options.free_dimensions_by_name or options.free_dimensions_by_denotation or options.initializers
            or files):
        return model
    if is_offline_model(model) or not isinstance(model, (str, bytes, bytearray, memoryview, onnx.ModelProto)) \
            and not hasattr(model, "__fspath__"):
        raise InputError("free dimension overrides and initializers apply to ONNX models; this model is a "
                         f"{type(model).__name__}")
    proto, folder, name = load_model(model)
    proto = _copy(proto)
    # Step 1: free dimensions of the graph's inputs
    for vi in proto.graph.input:
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            size = options.free_dimensions_by_name.get(d.dim_param) if d.HasField("dim_param") else None
            if size is None and d.denotation and not d.HasField("dim_value"):
                size = options.free_dimensions_by_denotation.get(d.denotation)
            if size is not None:
                d.dim_value = size   # clears dim_param (a oneof)
    # Step 2: initializers given by the options
    inits = {t.name: k for k, t in enumerate(proto.graph.initializer)}
    for iname, arr in options.initializers.items():
        if iname not in inits:
            raise InputError(f"add_initializer: '{iname}' is not an initializer of '{name}'; initializers: "
                             f"{', '.join(list(inits)[:20])}")
        old = proto.graph.initializer[inits[iname]]
        new = numpy_helper.from_array(arr, iname)
        if list(old.dims) != list(new.dims) or old.data_type != new.data_type:
            raise InputError(f"add_initializer: '{iname}' is {arr.dtype}{list(arr.shape)}; the model's is "
                             f"{onnx.TensorProto.DataType.Name(old.data_type).lower()}{list(old.dims)}")
        old.CopyFrom(new)
    # Step 3: external data files given in memory
    for t in proto.graph.initializer if files else ():
        if t.data_location == onnx.TensorProto.EXTERNAL:
            info = {e.key: e.value for e in t.external_data}
            if info.get("location") in files:
                data = files[info["location"]]
                start = int(info.get("offset", 0))
                end = start + int(info["length"]) if "length" in info else len(data)
                t.raw_data = data[start:end]
                t.data_location = onnx.TensorProto.DEFAULT
                del t.external_data[:]
    if folder is not None and any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer):
        onnx.external_data_helper.load_external_data_for_model(proto, folder)
    return proto


def _copy(proto: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    return out

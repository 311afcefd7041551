"""TensorFlow GraphDef reading, without TensorFlow: ge declares the messages itself (tensorflow_proto.py).

Parsing (.pb binary, .pbtxt text, bytes, a GraphDef, or a SavedModel folder frozen with TensorFlow when it
is installed), dtypes, Const tensors (tensor_content or typed *_val fields, a short list repeating its last
value), NodeDef attributes as Python values, and tensor names ("node:port"). Messages are read by field
name, so a GraphDef of TensorFlow's or tensorboard's own classes works as well as ge's.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ..errors import ModelLoadError
from .onnx import MAX_PROTO_BYTES


def _classes():
    """(GraphDef class, DataType enum descriptor): TensorFlow's own when TensorFlow is loaded in this
    process already (a SavedModel was frozen, or the caller uses it), else ge's declarations."""
    if "tensorflow" in sys.modules:
        try:
            from tensorflow.core.framework import graph_pb2, types_pb2
            return graph_pb2.GraphDef, types_pb2.DataType.DESCRIPTOR
        except ImportError:
            pass
    from . import tensorflow_proto
    return tensorflow_proto.GraphDef, tensorflow_proto.DataType


def is_graphdef(model) -> bool:
    """A GraphDef message of any package's classes (TensorFlow's, ge's; tensorboard names it its own)."""
    name = getattr(getattr(model, "DESCRIPTOR", None), "full_name", "")
    return name in ("tensorflow.GraphDef", "tensorboard.GraphDef")


# -- dtypes and tensors --------------------------------------------------------------------------------

_NUMPY = {"DT_FLOAT": np.float32, "DT_DOUBLE": np.float64, "DT_INT8": np.int8, "DT_INT16": np.int16,
          "DT_INT32": np.int32, "DT_INT64": np.int64, "DT_UINT8": np.uint8, "DT_UINT16": np.uint16,
          "DT_UINT32": np.uint32, "DT_UINT64": np.uint64, "DT_BOOL": np.bool_}


def _dtype_table():
    _, types = _classes()
    return {types.values_by_name[k].number: v for k, v in _NUMPY.items()}


def dtype_code(name: str) -> int:
    """TensorFlow's DataType number of "DT_FLOAT" and friends."""
    return _classes()[1].values_by_name[name].number


def np_dtype(code: int, where: str) -> np.dtype:
    """numpy dtype of a TensorFlow DataType enum value (float16, strings, resources... are refused)."""
    table = _dtype_table()
    if code not in table:
        known = _classes()[1].values_by_number
        name = known[code].name if code in known else code
        raise ModelLoadError(f"unsupported TensorFlow dtype {name} of {where}")
    return np.dtype(table[code])


_VAL_FIELDS = {"f": "float_val", "d": "double_val", "q": "int64_val", "Q": "uint64_val", "I": "uint32_val",
               "?": "bool_val"}


def tensor_to_array(t, where: str) -> np.ndarray:
    """A TensorProto as an ndarray: tensor_content (little-endian bytes), or the typed *_val field, where
    fewer values than elements repeat the last one (a single value broadcasts)."""
    dtype = np_dtype(t.dtype, where)
    if t.tensor_shape.unknown_rank or any(d.size < 0 for d in t.tensor_shape.dim):
        raise ModelLoadError(f"{where}: a constant needs a fully known shape")
    shape = tuple(int(d.size) for d in t.tensor_shape.dim)
    n = int(np.prod(shape, dtype=np.int64))
    if t.tensor_content:
        flat = np.frombuffer(t.tensor_content, dtype.newbyteorder("<"))
        if flat.size != n:
            raise ModelLoadError(f"{where}: tensor_content holds {flat.size} values for shape {list(shape)}")
        return flat.astype(dtype).reshape(shape)
    vals = np.asarray(getattr(t, _VAL_FIELDS.get(dtype.char, "int_val")), dtype)
    if vals.size > n:
        raise ModelLoadError(f"{where}: {vals.size} values for shape {list(shape)}")
    if vals.size == 0:
        return np.zeros(shape, dtype)
    if vals.size < n:
        vals = np.concatenate([vals, np.full(n - vals.size, vals[-1], dtype)])
    return vals.reshape(shape)


def attr(node, name: str, default=None):
    """A NodeDef attribute as a Python value (ints, floats, str, bool, lists, dtypes as enum ints)."""
    if name not in node.attr:
        return default
    a = node.attr[name]
    kind = a.WhichOneof("value")
    if kind == "list":
        lst = a.list
        for field in ("i", "f", "s", "b", "type"):
            if len(getattr(lst, field)):
                vals = list(getattr(lst, field))
                return [v.decode() for v in vals] if field == "s" else vals
        return []
    if kind == "s":
        return a.s.decode()
    if kind == "tensor":
        return tensor_to_array(a.tensor, f"attribute '{name}' of node '{node.name}'")
    if kind == "shape":
        return None if a.shape.unknown_rank else [int(d.size) for d in a.shape.dim]
    return getattr(a, kind) if kind else default


# -- loading -------------------------------------------------------------------------------------------

def load_graphdef(model):
    """(GraphDef, display name) from a path (.pb, .pbtxt, SavedModel folder), bytes or a GraphDef."""
    if is_graphdef(model):
        return model, "<GraphDef>"
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _parse(bytes(model), "<bytes>", text=False), "<bytes>"
    path = Path(model)
    if path.is_dir():
        return _freeze_saved_model(path), str(path)
    if not path.is_file():
        raise ModelLoadError(f"model file '{path}' does not exist")
    size = path.stat().st_size
    if size > MAX_PROTO_BYTES:  # refused before reading: protobuf cannot parse it anyway
        raise ModelLoadError(f"'{path}' is {size} bytes; a GraphDef protobuf is at most 2 GiB")
    return _parse(path.read_bytes(), str(path), text=path.suffix == ".pbtxt"), str(path)


def _parse(data: bytes, name: str, text: bool):
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError
    gd = _classes()[0]()
    try:
        if text:   # fields ge does not declare (a function library) are skipped
            text_format.Parse(data.decode("utf-8"), gd, allow_unknown_field=True)
        else:
            gd.ParseFromString(data)
    except (DecodeError, text_format.ParseError, UnicodeDecodeError, RuntimeError, ValueError) as e:
        kind = "text" if text else "binary"
        raise ModelLoadError(f"'{name}' is not a valid TensorFlow GraphDef ({kind} protobuf parse failed: "
                             f"{e})") from None
    if not gd.node or any(not n.name or not n.op for n in gd.node):
        raise ModelLoadError(f"'{name}' is not a TensorFlow GraphDef: it has no nodes, or nodes without a "
                             "name or op")
    return gd


def _freeze_saved_model(path: Path):
    """The serving signature of a SavedModel, frozen to a GraphDef (needs TensorFlow)."""
    try:
        import tensorflow as tf
        from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    except ImportError:
        raise ModelLoadError(f"'{path}' is a folder: reading a SavedModel needs TensorFlow installed; or "
                             "give a frozen GraphDef (.pb)") from None
    try:
        loaded = tf.saved_model.load(str(path))
        sig = loaded.signatures.get("serving_default") or next(iter(loaded.signatures.values()))
        frozen = convert_variables_to_constants_v2(sig)
    except Exception as e:  # noqa: BLE001 - whatever TensorFlow raises, the folder is not usable
        raise ModelLoadError(f"cannot load the SavedModel '{path}': {type(e).__name__}: {e}") from None
    return frozen.graph.as_graph_def()   # TensorFlow's own GraphDef: read as it is


# -- tensor names --------------------------------------------------------------------------------------

def split_tensor(name: str) -> tuple[str, int]:
    """'node:1' -> ('node', 1); 'node' and 'node:0' -> ('node', 0)."""
    node, _, port = name.rpartition(":")
    if node and port.isdigit():
        return node, int(port)
    return name, 0


def value_name(node: str, port: int) -> str:
    return node if port == 0 else f"{node}:{port}"

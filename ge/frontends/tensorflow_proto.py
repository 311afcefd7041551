"""TensorFlow's GraphDef messages, declared here: the fields ge reads, by TensorFlow's wire numbers and names.

Reading a GraphDef needs only its schema, not TensorFlow (a 500 MB install) nor tensorboard (~55 MB with
grpcio, for ~0.4 MB of protos). The messages are built at import from a FileDescriptorProto in a private
descriptor pool (so they never clash with TensorFlow's or tensorboard's "tensorflow.*" classes when those
are loaded too), with the protobuf runtime onnx already brings. Declared: GraphDef (node, versions),
NodeDef, AttrValue and its ListValue and NameAttrList, TensorProto, TensorShapeProto, VersionDef and the
DataType enum. Fields ge never reads (a function library, debug info) stay unknown fields: kept by binary
parsing, skipped by text parsing.
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto
OPT, REP = F.LABEL_OPTIONAL, F.LABEL_REPEATED
I32, I64, U32, U64, FLT, DBL, BOOL, STR, BYTES, MSG, ENUM = (
    F.TYPE_INT32, F.TYPE_INT64, F.TYPE_UINT32, F.TYPE_UINT64, F.TYPE_FLOAT, F.TYPE_DOUBLE, F.TYPE_BOOL,
    F.TYPE_STRING, F.TYPE_BYTES, F.TYPE_MESSAGE, F.TYPE_ENUM)

# DataType (types.proto): the numbers are TensorFlow's; *_REF types are the base + 100
DATA_TYPES = ["INVALID", "FLOAT", "DOUBLE", "INT32", "UINT8", "INT16", "INT8", "STRING", "COMPLEX64", "INT64",
              "BOOL", "QINT8", "QUINT8", "QINT32", "BFLOAT16", "QINT16", "QUINT16", "UINT16", "COMPLEX128", "HALF",
              "RESOURCE", "VARIANT", "UINT32", "UINT64"]

# message -> [(name, number, label, type, type name or None, oneof index or None)]
_ATTR_ONEOF = 0
MESSAGES = {
    "TensorShapeProto": [("dim", 2, REP, MSG, ".tensorflow.TensorShapeProto.Dim", None),
                         ("unknown_rank", 3, OPT, BOOL, None, None)],
    "TensorShapeProto.Dim": [("size", 1, OPT, I64, None, None), ("name", 2, OPT, STR, None, None)],
    "TensorProto": [("dtype", 1, OPT, ENUM, ".tensorflow.DataType", None),
                    ("tensor_shape", 2, OPT, MSG, ".tensorflow.TensorShapeProto", None),
                    ("version_number", 3, OPT, I32, None, None), ("tensor_content", 4, OPT, BYTES, None, None),
                    ("half_val", 13, REP, I32, None, None), ("float_val", 5, REP, FLT, None, None),
                    ("double_val", 6, REP, DBL, None, None), ("int_val", 7, REP, I32, None, None),
                    ("string_val", 8, REP, BYTES, None, None), ("scomplex_val", 9, REP, FLT, None, None),
                    ("int64_val", 10, REP, I64, None, None), ("bool_val", 11, REP, BOOL, None, None),
                    ("dcomplex_val", 12, REP, DBL, None, None), ("uint32_val", 16, REP, U32, None, None),
                    ("uint64_val", 17, REP, U64, None, None)],
    "NameAttrList": [("name", 1, OPT, STR, None, None),
                     ("attr", 2, REP, MSG, ".tensorflow.NameAttrList.AttrEntry", None)],
    "NameAttrList.AttrEntry": "map",
    "AttrValue": [("list", 1, OPT, MSG, ".tensorflow.AttrValue.ListValue", _ATTR_ONEOF),
                  ("s", 2, OPT, BYTES, None, _ATTR_ONEOF), ("i", 3, OPT, I64, None, _ATTR_ONEOF),
                  ("f", 4, OPT, FLT, None, _ATTR_ONEOF), ("b", 5, OPT, BOOL, None, _ATTR_ONEOF),
                  ("type", 6, OPT, ENUM, ".tensorflow.DataType", _ATTR_ONEOF),
                  ("shape", 7, OPT, MSG, ".tensorflow.TensorShapeProto", _ATTR_ONEOF),
                  ("tensor", 8, OPT, MSG, ".tensorflow.TensorProto", _ATTR_ONEOF),
                  ("placeholder", 9, OPT, STR, None, _ATTR_ONEOF),
                  ("func", 10, OPT, MSG, ".tensorflow.NameAttrList", _ATTR_ONEOF)],
    "AttrValue.ListValue": [("s", 2, REP, BYTES, None, None), ("i", 3, REP, I64, None, None),
                            ("f", 4, REP, FLT, None, None), ("b", 5, REP, BOOL, None, None),
                            ("type", 6, REP, ENUM, ".tensorflow.DataType", None),
                            ("shape", 7, REP, MSG, ".tensorflow.TensorShapeProto", None),
                            ("tensor", 8, REP, MSG, ".tensorflow.TensorProto", None),
                            ("func", 9, REP, MSG, ".tensorflow.NameAttrList", None)],
    "NodeDef": [("name", 1, OPT, STR, None, None), ("op", 2, OPT, STR, None, None),
                ("input", 3, REP, STR, None, None), ("device", 4, OPT, STR, None, None),
                ("attr", 5, REP, MSG, ".tensorflow.NodeDef.AttrEntry", None)],
    "NodeDef.AttrEntry": "map",
    "VersionDef": [("producer", 1, OPT, I32, None, None), ("min_consumer", 2, OPT, I32, None, None),
                   ("bad_consumers", 3, REP, I32, None, None)],
    "GraphDef": [("node", 1, REP, MSG, ".tensorflow.NodeDef", None), ("version", 3, OPT, I32, None, None),
                 ("versions", 4, OPT, MSG, ".tensorflow.VersionDef", None)],
}


def _message(name: str, fields) -> descriptor_pb2.DescriptorProto:
    m = descriptor_pb2.DescriptorProto(name=name.rpartition(".")[2])
    if fields == "map":   # map<string, AttrValue>: a nested entry message
        m.options.map_entry = True
        fields = [("key", 1, OPT, STR, None, None), ("value", 2, OPT, MSG, ".tensorflow.AttrValue", None)]
    for fname, number, label, ftype, type_name, oneof in fields:
        f = m.field.add(name=fname, number=number, label=label, type=ftype)
        if type_name:
            f.type_name = type_name
        if oneof is not None:
            f.oneof_index = oneof
    if name == "AttrValue":
        m.oneof_decl.add(name="value")
    return m


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="ge/tensorflow_graph.proto", package="tensorflow", syntax="proto3")
    enum = fd.enum_type.add(name="DataType")
    for k, t in enumerate(DATA_TYPES):
        enum.value.add(name=f"DT_{t}", number=k)
    for k, t in enumerate(DATA_TYPES[1:], 1):
        enum.value.add(name=f"DT_{t}_REF", number=100 + k)
    top: dict[str, descriptor_pb2.DescriptorProto] = {}
    for name, fields in MESSAGES.items():   # parents come before their nested types
        parent, _, _ = name.rpartition(".")
        m = _message(name, fields)
        if parent:
            top[parent].nested_type.append(m)
            top[name] = top[parent].nested_type[-1]
        else:
            fd.message_type.append(m)
            top[name] = fd.message_type[-1]
    return fd


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())


def _class(full_name: str):
    desc = _POOL.FindMessageTypeByName(full_name)
    if hasattr(message_factory, "GetMessageClass"):   # protobuf >= 4.22
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(_POOL).GetPrototype(desc)


GraphDef = _class("tensorflow.GraphDef")
NodeDef = _class("tensorflow.NodeDef")
AttrValue = _class("tensorflow.AttrValue")
TensorProto = _class("tensorflow.TensorProto")
TensorShapeProto = _class("tensorflow.TensorShapeProto")
DataType = _POOL.FindEnumTypeByName("tensorflow.DataType")   # .values_by_name / .values_by_number

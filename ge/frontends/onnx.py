"""ONNX frontend: a path, bytes or ModelProto -> ir.Graph.

Step 1: parse the protobuf (a bad file is a ModelLoadError, never a crash).
Step 2: load external initializer data, only from inside the model's folder.
Step 3: run onnx.shape_inference for dtypes and (symbolic) shapes; ge's own inference refines them later.
Step 4: build the Graph: inputs (initializers are constants, not feeds), constants, nodes in topological
        order (a cycle or a dangling input is a ModelLoadError naming the node), outputs.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import external_data_helper, shape_inference

from ..errors import ModelFileError, ModelLoadError, ModelParseError, UnsupportedOpError
from ..ir import Graph
from ..ir.dtypes import check, from_onnx, to_onnx
from ..kernels.ml import output_types
from .onnx_attrs import attribute_value, node_attributes, tensor_to_array
from .onnx_bodies import check_bodies, free_names, node_free_names, value_kind
from .onnx_functions import inline_functions

MAX_PROTO_BYTES = (2 << 30) - 1
MAX_DEPTH, MAX_NODES, MAX_ATTRS = 16, 1 << 20, 1024         # subgraph nesting, nodes in all, attributes a node
MAX_NAME, MAX_STRING = 1 << 16, 1 << 24                     # characters of a name, bytes of a string attribute


def load_model(model) -> tuple[onnx.ModelProto, str | None, str]:
    """(ModelProto without external data resolved, its folder or None, a display name)."""
    if isinstance(model, onnx.ModelProto):
        _check_names(model.graph, "model")
        return model, None, model.graph.name or "model"
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _parse(bytes(model), "<bytes>"), None, "<bytes>"
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.is_file():
            what = "is not a regular file" if path.exists() else "does not exist"
            raise ModelFileError(f"model file '{path}' {what}")
        size = path.stat().st_size
        if size > MAX_PROTO_BYTES:  # refused before reading: protobuf cannot parse it anyway
            raise ModelLoadError(f"'{path}' is {size} bytes; an ONNX protobuf is at most 2 GiB (larger models "
                                 "keep their weights as external data)")
        return _parse(path.read_bytes(), str(path)), str(path.resolve().parent), str(path)
    raise ModelLoadError(f"cannot load a model from {type(model).__name__}: give a path, bytes or ModelProto")


def _parse(data: bytes, name: str) -> onnx.ModelProto:
    m = onnx.ModelProto()
    try:
        m.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise ModelParseError(f"'{name}' is not a valid ONNX model (protobuf parse failed: {e})") from None
    if not m.HasField("graph") or not m.graph.node and not m.graph.output:
        raise ModelLoadError(f"'{name}' is not an ONNX model: it has no graph")
    _check_names(m.graph, name)
    return m


def _check_names(g, model_name: str) -> None:
    """Names must be UTF-8 (protobuf hands back a string field that is not as bytes; ge's names are str), and
    a model's size must stay within bounds before anything walks it recursively: subgraph nesting, nodes,
    attributes per node, string lengths (a model built to exhaust memory or the stack is a ModelLoadError,
    found by one bounded, iterative walk)."""
    def bad(kind, s):
        raise ModelLoadError(f"'{model_name}': {kind} name {s!r:.80} is not valid UTF-8")

    def over(what, n, limit):
        raise ModelLoadError(f"'{model_name}': {what} ({n}) is above ge's limit of {limit}")
    stack, nodes = [(g, 0)], 0
    while stack:
        g, depth = stack.pop()
        if depth > MAX_DEPTH:
            over("subgraph nesting depth", depth, MAX_DEPTH)
        if not isinstance(g.name, str):
            bad("graph", g.name)
        for kind, items in (("input", g.input), ("output", g.output), ("value_info", g.value_info),
                            ("initializer", g.initializer)):
            for x in items:
                if not isinstance(x.name, str):
                    bad(kind, x.name)
        nodes += len(g.node)
        if nodes > MAX_NODES:
            over("node count", nodes, MAX_NODES)
        for n in g.node:
            for kind, s in [("node", n.name), ("op type", n.op_type), ("domain", n.domain)] + \
                    [("value", x) for x in (*n.input, *n.output)]:
                if not isinstance(s, str):
                    bad(kind, s)
                if len(s) > MAX_NAME:
                    over(f"length of {kind} name '{s[:40]}...'", len(s), MAX_NAME)
            if len(n.attribute) > MAX_ATTRS:
                over(f"attribute count of node '{n.name[:80]}'", len(n.attribute), MAX_ATTRS)
            for a in n.attribute:
                if len(a.s) > MAX_STRING or sum(map(len, a.strings)) > MAX_STRING:
                    over(f"string size of attribute '{a.name[:80]}' of node '{n.name[:80]}'",
                         max(len(a.s), sum(map(len, a.strings))), MAX_STRING)
                stack += [(sub, depth + 1) for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs)]


def _load_external(t: onnx.TensorProto, base_dir: str | None, model_name: str) -> None:
    """Fill an external tensor's raw_data, refusing locations outside the model's folder."""
    info = {e.key: e.value for e in t.external_data}
    location = info.get("location", "")
    if not isinstance(location, str) or "\0" in location:
        raise ModelLoadError(f"{model_name}: tensor '{t.name}' has an invalid external data location "
                             f"{location!r}; refused")
    if base_dir is None:
        raise ModelLoadError(f"{model_name}: tensor '{t.name}' has external data '{location}' but the model "
                             "was not loaded from a file; pass its path instead")
    root = os.path.realpath(base_dir)
    target = os.path.realpath(os.path.join(root, location))
    if os.path.isabs(location) or os.path.commonpath([root, target]) != root:
        raise ModelLoadError(f"{model_name}: tensor '{t.name}' refers to external data '{location}' outside "
                             "the model's folder; refused")
    if not os.path.isfile(target):
        raise ModelLoadError(f"{model_name}: external data file '{location}' of tensor '{t.name}' is missing")
    _check_external_size(t, info, os.path.getsize(target), model_name)
    try:
        external_data_helper.load_external_data_for_tensor(t, root)
    except Exception as e:  # noqa: BLE001
        raise ModelLoadError(f"{model_name}: cannot read external data of tensor '{t.name}': {e}") from None
    t.data_location = onnx.TensorProto.DEFAULT
    del t.external_data[:]


def _check_external_size(t: onnx.TensorProto, info: dict, file_size: int, model_name: str) -> None:
    """The bytes to read (`length`, or the file from `offset` to its end) must be the tensor's declared
    size: refused before reading, so a huge or wrong file is never loaded into memory."""
    packed = {getattr(onnx.TensorProto, n, -1) for n in ("STRING", "INT4", "UINT4", "FLOAT4E2M1", "INT2", "UINT2")}
    if t.data_type in packed:  # strings have no fixed size; sub-byte types pack several per byte
        return
    try:
        offset, length = int(info.get("offset", 0)), int(info["length"]) if "length" in info else None
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
    except (ValueError, KeyError, TypeError) as e:
        raise ModelLoadError(f"{model_name}: external data of tensor '{t.name}' is malformed ({e})") from None
    declared = math.prod(t.dims) * itemsize
    available = file_size - offset if length is None else length
    if offset < 0 or offset > file_size or available != declared or offset + available > file_size:
        raise ModelLoadError(f"{model_name}: tensor '{t.name}' declares {list(t.dims)} ({declared} bytes) "
                             f"but its external data '{info.get('location')}' offers {available} bytes at offset "
                             f"{offset} of a {file_size}-byte file")


def _dims(type_proto, fresh) -> tuple | None:
    tt = type_proto.tensor_type
    if not tt.HasField("shape"):
        return None
    out = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            if d.dim_value < 0:
                raise ModelLoadError(f"negative dimension {d.dim_value}")
            out.append(int(d.dim_value))
        else:
            out.append(d.dim_param or fresh())
    return tuple(out)


def import_onnx(model) -> Graph:
    proto, base_dir, name = load_model(model)
    g = proto.graph
    for t in g.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            _load_external(t, base_dir, name)
    opsets = _opsets(proto)
    _check_opset(g, opsets.get("", 0))
    try:
        inferred = shape_inference.infer_shapes(proto, strict_mode=False).graph
    except Exception:  # noqa: BLE001 - inference is a hint only; ge infers again
        inferred = g
    inferred = _typed_ml_outputs(proto, inferred)
    expanded = inline_functions(proto, opsets, inferred)
    if expanded is not None:  # ops ge runs as their ONNX functions, typed again with their new nodes
        proto, g = expanded, expanded.graph
        opsets = _opsets(proto)
        try:
            inferred = shape_inference.infer_shapes(proto, strict_mode=False).graph
        except Exception:  # noqa: BLE001 - as above
            inferred = g
    infos = {}
    _collect_infos(inferred, infos)
    counter = iter(range(1 << 30))

    def fresh():
        return f"unk__{next(counter)}"

    graph = Graph(g.name or Path(name).stem, opsets)
    _Importer(name, opsets, infos, fresh).fill(g, graph, None)
    return graph


def _opsets(proto) -> dict[str, int]:
    opsets = {(o.domain or ""): int(o.version) for o in proto.opset_import}
    if "ai.onnx" in opsets:
        opsets.setdefault("", opsets.pop("ai.onnx"))
    return opsets


def _collect_infos(g, infos: dict) -> None:
    """value_info of a graph and of every body in it (ONNX names are unique across a model's scopes)."""
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        infos.setdefault(vi.name, vi)
    for n in g.node:
        for a in n.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                _collect_infos(sub, infos)


class _Importer:
    """Fills an ir.Graph from a GraphProto; a body (graph attribute) becomes a Graph of its own whose reads
    of enclosing values are captures (ir.graph's module doc), resolved scope by scope outwards."""

    def __init__(self, name, opsets, infos, fresh):
        self.name, self.opsets, self.infos, self.fresh = name, opsets, infos, fresh
        self.captured: dict[int, list] = {}   # id(body Graph) -> the outer values of its captures, in order

    def typed(self, value_name, v):
        vi = self.infos.get(value_name)
        if vi is not None and vi.HasField("type"):
            kind, tp = value_kind(vi.type)
            if not kind:
                raise ModelLoadError(f"{self.name}: value '{value_name}' has a type ge does not support "
                                     f"({vi.type.WhichOneof('value')})")
            v.kind = kind
            if tp is not None:
                code = tp.tensor_type.elem_type
                v.dtype = from_onnx(code, f"value '{value_name}' of {self.name}") if code else None
                try:
                    v.shape = _dims(tp, self.fresh) if kind in ("tensor", "optional") else None
                except ModelLoadError:   # an inferred -1 (onnx's inference inside bodies): unknown
                    v.shape = None
        return v

    def fill(self, g, graph: Graph, outer) -> None:
        """`outer(value name) -> Value | None` resolves names of enclosing scopes (None at the top)."""
        name = self.name
        for t in g.initializer:
            if t.data_location == onnx.TensorProto.EXTERNAL and outer is not None:
                raise ModelLoadError(f"{name}: body initializer '{t.name}' has external data; refused")
            if t.name in graph.values:
                raise ModelLoadError(f"{name}: initializer '{t.name}' is defined twice")
            v = graph.add_value(t.name)
            v.const = tensor_to_array(t)
            v.dtype, v.shape = check(v.const.dtype, f"initializer '{t.name}' of {name}"), v.const.shape
        initializers = {t.name for t in g.initializer}
        for vi in g.input:
            if vi.name in initializers:
                continue  # an initializer listed as input (IR < 4): a constant, not a feed
            if vi.name in graph.values:
                raise ModelLoadError(f"{name}: graph input '{vi.name}' is declared twice")
            kind, tp = value_kind(vi.type) if vi.HasField("type") else ("tensor", None)
            if not kind or (outer is None and tp is None):
                raise ModelLoadError(f"{name}: input '{vi.name}' is not a tensor, sequence or optional "
                                     f"({vi.type.WhichOneof('value')} is unsupported)")
            v = graph.add_input(vi.name, None, None)
            v.kind = kind
            if tp is not None and tp.tensor_type.elem_type:
                v.dtype = from_onnx(tp.tensor_type.elem_type, f"input '{vi.name}' of {name}")
                try:
                    v.shape = _dims(tp, self.fresh) if kind in ("tensor", "optional") else None
                except ModelLoadError as e:
                    raise ModelLoadError(f"{name}: input '{vi.name}': {e}") from None
            elif outer is not None:
                self.typed(vi.name, v)

        def resolve(x):
            """A value of this graph, or an enclosing one's (captured into this body)."""
            v = graph.values.get(x)
            if v is None and outer is not None:
                src = outer(x)
                if src is not None:
                    v = graph.add_capture(x, src.dtype, src.shape, src.kind)
                    self.captured[id(graph)].append(src)
            return v
        self.captured[id(graph)] = []
        local = set(graph.values) | {o for n in g.node for o in n.output}
        used: set[str] = set()
        available = set(graph.values) | (free_names(g) - local if outer is not None else set())
        for i, n in enumerate(_topological(g.node, available, name, local)):
            opset = self.opsets.get(n.domain if n.domain != "ai.onnx" else "", 0)
            _check_schema(n, opset, name)
            node_name = n.name or f"{n.op_type}_{i}"
            if node_name in used:  # names must be unique in ge; ONNX only recommends it
                node_name = f"{node_name}_{i}"
            used.add(node_name)
            ins = [(resolve(x) or self._unknown(n, node_name, x)) if x else None for x in n.input]
            for k, out in enumerate(n.output):
                if out and (out in graph.values or out in n.output[:k]):
                    raise ModelLoadError(f"{name}: value '{out}' is defined twice (again by node '{node_name}')")
            bodies, attrs = {}, {}
            for a in n.attribute:
                if a.HasField("g"):
                    bodies[a.name] = self.body(a.g, n, node_name, a.name, resolve)
                elif a.graphs:
                    raise ModelLoadError(f"{name}: {n.op_type} node '{node_name}': attribute '{a.name}' is a "
                                         "list of graphs; ge supports single-graph bodies only")
                else:
                    attrs[a.name] = attribute_value(a)
            captured = [src for b in bodies.values() for src in self.captured[id(b)]]
            # an omitted optional output ("") gets a name of its own, suffixed by its position: fresh_name
            # alone would give every omitted output of the node the same (not yet added) name
            outs = [o or graph.fresh_name(f"{node_name}_unused{k}") for k, o in enumerate(n.output)]
            node = graph.add_node(n.op_type, ins + captured, outs, attrs, node_name,
                                  n.domain if n.domain != "ai.onnx" else "")
            node.bodies = bodies
            if bodies:
                check_bodies(node, opset, name)
            for v in node.outputs:
                self.typed(v.name, v)
            if node.domain == "ai.onnx.ml" and any(v.dtype is None for v in node.outputs):
                _ml_types(node)
        for vi in g.output:
            v = resolve(vi.name)
            if v is None:
                raise ModelLoadError(f"{name}: graph output '{vi.name}' is never produced")
            graph.outputs.append(v)

    def body(self, g, n, node_name, attr, resolve) -> Graph:
        sub = Graph(f"{node_name}.{attr}", self.opsets)
        try:
            self.fill(g, sub, resolve)
        except ModelLoadError as e:
            if "in the body" in str(e):
                raise
            raise ModelLoadError(f"{e} (in the body '{attr}' of {n.op_type} node '{node_name}')") from None
        return sub

    def _unknown(self, n, node_name, x):
        raise ModelLoadError(f"{self.name}: {n.op_type} node '{node_name}' reads '{x}', which no enclosing "
                             "graph defines")


def _typed_ml_outputs(proto, inferred):
    """ONNX's inference leaves most ONNX-ML ops' outputs untyped, and so everything after them (an SVC
    export's Cast, Neg and ArrayFeatureExtractor): with ge.kernels.ml's types declared, ONNX infers again.
    The inferred graph back (the given one when there was nothing to add or inference fails)."""
    known = {vi.name: vi for vi in list(inferred.value_info) + list(inferred.input) + list(inferred.output)}
    known.update({t.name: onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                  for t in proto.graph.initializer})
    added = []
    for n in proto.graph.node:
        if n.domain != "ai.onnx.ml" or all(o in known for o in n.output if o):
            continue
        ins = []
        for x in n.input:
            vi = known.get(x)
            tt = vi.type.tensor_type if vi is not None and vi.type.HasField("tensor_type") else None
            dims = None if tt is None or not tt.HasField("shape") else tuple(
                d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim)
            ins.append(_Typed(from_onnx(tt.elem_type) if tt is not None and tt.elem_type else None, dims))
        types = output_types(n.op_type, node_attributes(n), ins) or ()
        for o, (dtype, shape, kind) in zip(n.output, types):
            if o and o not in known and dtype is not None and kind == "tensor":
                vi = onnx.helper.make_tensor_value_info(o, to_onnx(dtype), None if shape is None else list(shape))
                known[o] = vi
                added.append(vi)
    if not added:
        return inferred
    augmented = onnx.ModelProto()
    augmented.CopyFrom(proto)
    augmented.graph.value_info.extend(added)
    try:
        return shape_inference.infer_shapes(augmented, strict_mode=False).graph
    except Exception:  # noqa: BLE001 - a hint, as above
        return inferred


class _Typed:
    """What output_types reads of an input value: dtype and shape."""
    __slots__ = ("dtype", "shape")

    def __init__(self, dtype, shape):
        self.dtype, self.shape = dtype, shape


def _ml_types(node) -> None:
    """Types ONNX's inference leaves out for ONNX-ML ops (Normalizer, the classifiers...): ge.kernels.ml's."""
    types = output_types(node.op_type, node.attrs, node.inputs)
    for v, (dtype, shape, kind) in zip(node.outputs, types or ()):
        if v.dtype is None and dtype is not None:
            v.dtype, v.kind = np.dtype(dtype), kind
            if v.shape is None and kind == "tensor":
                v.shape = shape


def _check_schema(n, opset: int, model_name: str) -> None:
    """Input/output counts, required attributes and attribute types against ONNX's schema of the op at
    the model's opset, so a malformed node is a ModelLoadError naming it, not a crash inside a kernel.
    Ops ONNX does not define (other domains, removed ops) are left to the kernel registry."""
    if n.domain not in ("", "ai.onnx"):
        return
    try:
        schema = onnx.defs.get_schema(n.op_type, opset, "")
    except onnx.defs.SchemaError:
        return
    where = f"{model_name}: {n.op_type} node '{n.name or n.op_type}'"
    for what, count, lo, hi in (("inputs", len(n.input), schema.min_input, schema.max_input),
                                ("outputs", len(n.output), schema.min_output, schema.max_output)):
        if not lo <= count <= hi:
            want = f"{lo}" if lo == hi else f"{lo} to {hi}"
            raise ModelLoadError(f"{where} has {count} {what}; opset {opset} {n.op_type} takes {want}")
    optional = onnx.defs.OpSchema.FormalParameterOption.Optional
    for i, x in enumerate(n.input):  # "" leaves out an optional input only (a kernel would read None)
        formal = schema.inputs[min(i, len(schema.inputs) - 1)] if schema.inputs else None
        if x == "" and formal is not None and formal.option != optional:
            raise ModelLoadError(f"{where}: input {i} ('{formal.name}') is empty, but opset {opset} "
                                 f"{n.op_type} requires it")
    given = {a.name: a for a in n.attribute}
    for attr_name, spec in schema.attributes.items():
        a = given.get(attr_name)
        if a is None:
            if spec.required:
                raise ModelLoadError(f"{where} lacks its required attribute '{attr_name}'")
        elif a.type != int(spec.type) and not a.ref_attr_name:
            got = onnx.AttributeProto.AttributeType.Name(a.type) if a.type in \
                onnx.AttributeProto.AttributeType.values() else str(a.type)
            raise ModelLoadError(f"{where}: attribute '{attr_name}' is {got}, the schema wants "
                                 f"{spec.type.name}")


def _check_opset(g, opset: int) -> None:
    """A default-domain opset newer than the installed onnx defines has semantics ge cannot know."""
    newest = onnx.defs.onnx_opset_version()
    if opset > newest:
        from ..kernels.registry import registered_ops
        n = next((n for n in g.node if n.domain in ("", "ai.onnx")), None)
        op, node = (n.op_type, n.name or n.op_type) if n is not None else ("<none>", "<graph>")
        raise UnsupportedOpError(op, "", opset, node, registered_ops(),
                                 f"the model imports ONNX opset {opset}; the newest ge knows is {newest}")


def _topological(nodes, available: set[str], model_name: str, local: set[str] | None = None):
    """Nodes in an order where every input is defined first (ONNX requires it; some exporters don't).
    A control node also waits for the values of this graph (`local`) its bodies read."""
    pending = list(nodes)
    out = []
    available = set(available) | {""}
    deps = {id(n): list(n.input) + sorted(node_free_names(n) & (local or set())) for n in nodes}
    while pending:
        rest = []
        for n in pending:
            if all(x in available for x in deps[id(n)]):
                out.append(n)
                available.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            n = rest[0]
            missing = [x for x in deps[id(n)] if x not in available]
            produced = {o for r in rest for o in r.output}
            why = "a cycle" if all(x in produced for x in missing) else "an input nobody defines"
            raise ModelLoadError(f"{model_name}: node '{n.name or n.op_type}' ({n.op_type}) reads "
                                 f"{', '.join(repr(m) for m in missing)}: {why}")
        pending = rest
    return out

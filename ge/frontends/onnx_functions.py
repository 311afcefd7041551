"""Ops ge runs as ONNX functions (kernels/expanded.py): their nodes become the nodes of the function.

Step 1. Find the nodes of expanded ops, in the graph and in every body (none: the model is left as it is).
Step 2. Get each node's function: from ONNX's schema (a fixed body, or one the schema builds from the
        node's attributes and input types: SwiGLU, RotaryEmbedding, LinearAttention, CausalConvWithState,
        FlexAttention), or ge's own (onnx_builders.py) where the schema has none.
Step 3. Bind it: formal inputs and outputs become the node's, every other value and node name gets a prefix
        unique to the node (also inside the function's bodies: ONNX names are unique across scopes), and
        attribute references (@alpha) take the node's attribute, else the schema's default, else go.
Step 4. Repeat on the new nodes (a function may use another expanded op) after typing them again.
The functions use ops ge has kernels for; a missing default-domain opset import is added (an ai.onnx.ml
model imports only its own domain).
"""
from __future__ import annotations

import onnx
from onnx import helper, shape_inference

from ..errors import ModelLoadError
from ..kernels.registry import is_expanded
from .onnx_builders import BUILDERS

MAX_ROUNDS = 4


def inline_functions(proto: onnx.ModelProto, opsets: dict[str, int], inferred) -> onnx.ModelProto | None:
    """A copy of `proto` with every node of an expanded op replaced by its function, or None if it has none.
    `inferred` is proto's graph after onnx's shape inference (the input types the functions are built for)."""
    if not _has_expanded(proto.graph, opsets):
        return None
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    counter = iter(range(1 << 30))
    for _ in range(MAX_ROUNDS):
        types = _types(inferred)
        imports: dict[str, int] = {}
        _rewrite(model.graph, opsets, types, counter, imports)
        _add_imports(model, imports)
        if not _has_expanded(model.graph, opsets):
            return model
        try:
            inferred = shape_inference.infer_shapes(model, strict_mode=False).graph
        except Exception:  # noqa: BLE001 - types are a hint; a function that needs them says so
            inferred = model.graph
    raise ModelLoadError(f"functions of expanded ops still contain expanded ops after {MAX_ROUNDS} rounds")


def _bodies(n):
    for a in n.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        yield from a.graphs


def _expandable(n, opsets) -> bool:
    domain = "" if n.domain == "ai.onnx" else n.domain
    return is_expanded(n.op_type, domain, opsets.get(domain, 1))


def _has_expanded(g, opsets) -> bool:
    return any(_expandable(n, opsets) or any(_has_expanded(b, opsets) for b in _bodies(n)) for n in g.node)


def _types(g, out=None) -> dict[str, onnx.TypeProto]:
    """The type of every value of g and its bodies that onnx's inference (or the model) states."""
    out = {} if out is None else out
    for t in g.initializer:
        out.setdefault(t.name, helper.make_tensor_type_proto(t.data_type, list(t.dims)))
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if vi.HasField("type"):
            out.setdefault(vi.name, vi.type)
    for n in g.node:
        for b in _bodies(n):
            _types(b, out)
    return out


def _rewrite(g, opsets, types, counter, imports) -> None:
    nodes = []
    for n in g.node:
        for b in _bodies(n):
            _rewrite(b, opsets, types, counter, imports)
        if not _expandable(n, opsets):
            nodes.append(n)
            continue
        f, defaults = _function(n, opsets, [types.get(x, onnx.TypeProto()) if x else onnx.TypeProto()
                                            for x in n.input])
        for o in f.opset_import:
            imports.setdefault(o.domain, o.version)
        nodes.extend(_bind(n, f, defaults, f"{n.name or n.op_type}__f{next(counter)}__"))
    del g.node[:]
    g.node.extend(nodes)


def _function(n, opsets, in_types) -> tuple[onnx.FunctionProto, dict]:
    """The node's FunctionProto and the schema's attribute defaults."""
    domain = "" if n.domain == "ai.onnx" else n.domain
    version = opsets.get(domain, 1)
    where = f"{n.op_type} node '{n.name or n.op_type}'"
    try:
        schema = onnx.defs.get_schema(n.op_type, version, domain)
    except onnx.defs.SchemaError:
        schema = None
    defaults = {k: a.default_value for k, a in schema.attributes.items()
                if a.default_value.type != onnx.AttributeProto.UNDEFINED} if schema else {}
    build = BUILDERS.get((n.op_type, domain))
    f = onnx.FunctionProto()
    try:
        if build is not None:
            return build(n, in_types, {k: helper.get_attribute_value(v) for k, v in defaults.items()}), {}
        if schema is not None and schema.has_function:
            f.ParseFromString(schema.get_function_with_opset_version(_pick(schema.function_opset_versions, version)))
        elif schema is not None and schema.has_context_dependent_function:
            f.ParseFromString(schema.get_context_dependent_function_with_opset_version(
                _pick(schema.context_dependent_function_opset_versions, version), n.SerializeToString(),
                [t.SerializeToString() for t in in_types]))
        else:
            raise ModelLoadError(f"{where}: ONNX defines no function for {n.op_type} at opset {version}")
    except ModelLoadError:
        raise
    except Exception as e:  # noqa: BLE001 - onnx's builders raise plain errors on bad nodes or unknown types
        raise ModelLoadError(f"{where}: cannot build its ONNX function ({type(e).__name__}: {e}); ge runs "
                             f"{n.op_type} as that function, which needs the inputs' types and ranks") from None
    return f, defaults


def _pick(versions, version: int) -> int:
    fit = [v for v in versions if v <= version]
    return max(fit) if fit else min(versions)


def _bind(n, f: onnx.FunctionProto, defaults: dict, prefix: str) -> list[onnx.NodeProto]:
    rename = {x: (n.input[i] if i < len(n.input) else "") for i, x in enumerate(f.input)}
    rename.update({x: (n.output[k] if k < len(n.output) and n.output[k] else prefix + x)
                   for k, x in enumerate(f.output)})
    given = {a.name: a for a in n.attribute}
    given.update({a.name: a for a in f.attribute_proto if a.name not in given})
    given.update({k: a for k, a in defaults.items() if k not in given})
    return [_bind_node(fn, k, rename, prefix, given) for k, fn in enumerate(f.node)]


def _bind_node(fn, k, rename, prefix, given) -> onnx.NodeProto:
    out = onnx.NodeProto()
    out.CopyFrom(fn)
    name = lambda x: rename.get(x, prefix + x) if x else ""  # noqa: E731
    out.input[:] = [name(x) for x in fn.input]
    out.output[:] = [name(x) for x in fn.output]
    out.name = prefix + (fn.name or f"{fn.op_type}_{k}")
    attrs = []
    for a in fn.attribute:
        if a.ref_attr_name:
            src = given.get(a.ref_attr_name)
            if src is None:
                continue
            a2 = onnx.AttributeProto()
            a2.CopyFrom(src)
            a2.name = a.name
            attrs.append(a2)
            continue
        a2 = onnx.AttributeProto()
        a2.CopyFrom(a)
        for g in ([a2.g] if a2.type == onnx.AttributeProto.GRAPH else []) + list(a2.graphs):
            _bind_graph(g, rename, prefix, given)
        attrs.append(a2)
    del out.attribute[:]
    out.attribute.extend(attrs)
    return out


def _bind_graph(g, rename, prefix, given) -> None:
    """A body of a function's node: its names prefixed (or bound) like the function's own."""
    name = lambda x: rename.get(x, prefix + x) if x else ""  # noqa: E731
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        vi.name = name(vi.name)
    for t in g.initializer:
        t.name = name(t.name)
    nodes = [_bind_node(fn, k, rename, prefix + g.name + "/", given) for k, fn in enumerate(g.node)]
    for fn, new in zip(g.node, nodes):  # the body's values keep the one prefix its inputs/outputs got
        new.input[:] = [name(x) for x in fn.input]
        new.output[:] = [name(x) for x in fn.output]
    del g.node[:]
    g.node.extend(nodes)


def _add_imports(model, imports) -> None:
    have = {o.domain or "" for o in model.opset_import}
    for domain, version in imports.items():
        domain = "" if domain == "ai.onnx" else domain
        if domain not in have:
            model.opset_import.append(helper.make_opsetid(domain, version))
            have.add(domain)

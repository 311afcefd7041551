"""TensorFlow frontend: a frozen GraphDef (.pb binary, .pbtxt text, bytes or GraphDef) -> ir.Graph.

TensorFlow itself is not needed: ge declares the GraphDef messages it reads (tensorflow_proto.py), on the
protobuf runtime onnx brings. A SavedModel directory is accepted when TensorFlow is installed (its serving
signature is frozen first, and TensorFlow's own GraphDef is read).

Files: tensorflow_graphdef.py (parsing, dtypes, Const tensors, attributes), tensorflow_builder.py (the
Builder converters add nodes through), tensorflow_registry.py (the op table) filled by tensorflow_ops.py and
tensorflow_shape_ops.py.

Step 1: parse the GraphDef (a bad file is a ModelLoadError naming it).
Step 2: pick the inputs (the tensors named, else the Placeholders) and the outputs (the tensors named, else
        the sinks: nodes whose outputs nobody reads, NoOp/Const/Placeholder excepted); keep only the nodes
        the outputs need, in topological order. Control inputs (`^x`) order nothing in a frozen inference
        graph and are dropped.
Step 3: convert each node through the op table: Const tensors decode to constants,
        other ops become ONNX-named ge ops (opset 17). Shapes are inferred node by node as the graph grows,
        so converters can use ranks. An op missing from the table is an UnsupportedOpError.
Step 4: layout. Graph inputs and outputs keep the model's NHWC. Conv, pooling, BatchNorm and Resize run in
        NCHW between Transposes. The builder remembers which NHWC value is the transpose of an NCHW one, so
        elementwise ops, BiasAdd, Pad, Concat and spatial reductions of such values follow the NCHW layout
        and most transposes never materialize (dead ones go in eliminate_dead_code; passes/cancel_transposes
        removes adjacent pairs that remain). GE_TF_NAIVE_LAYOUT=1 turns the tracking off (for measuring).

Names: graph inputs and outputs are TF tensor names without ":0" (output k > 0 of node n is "n:k");
`inputs=`/`outputs=` accept either spelling. Inner values are named "<TF node>/<ONNX op>". A Placeholder dim
of -1 becomes a symbolic dim "<input>_d<i>" (runtime v2 binds it per run).
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import ModelLoadError
from ..ir import Graph, Value
from .tensorflow_builder import Builder
from .tensorflow_graphdef import attr, load_graphdef, np_dtype, split_tensor, value_name

__all__ = ["import_tensorflow", "load_graphdef"]
SKIPPED_SINKS = {"NoOp", "Const", "Placeholder", "PlaceholderWithDefault"}


def import_tensorflow(model, inputs=None, outputs=None, track_layout: bool | None = None) -> Graph:
    """A frozen TensorFlow graph as an ir.Graph; `inputs`/`outputs` are tensor names ("x" or "x:0")."""
    # Step 1: parse
    gd, name = load_graphdef(model)
    if track_layout is None:
        track_layout = os.environ.get("GE_TF_NAIVE_LAYOUT", "") not in ("1", "true")
    nodes = {}
    for n in gd.node:
        if n.name in nodes:
            raise ModelLoadError(f"{name}: node '{n.name}' is defined twice")
        nodes[n.name] = n
    # Step 2: inputs, outputs, and the nodes between them
    out_tensors = _pick_outputs(gd, nodes, outputs, name)
    in_tensors = None if inputs is None else [split_tensor(t) for t in inputs]
    for node_name, _ in in_tensors or ():
        if node_name not in nodes:
            raise ModelLoadError(f"{name}: input '{node_name}' is not a node of the graph")
    order = _topological(nodes, [n for n, _ in out_tensors], {n for n, _ in in_tensors or ()}, name)
    feeds = in_tensors if in_tensors is not None else [(n, 0) for n in order if nodes[n].op == "Placeholder"]
    graph = Graph(Path(name).stem if name[0] != "<" else "tensorflow", {"": 17})
    values = {(n, port): _graph_input(graph, nodes[n], port, name) for n, port in feeds}
    # Step 3 (and 4, inside the converters)
    b = Builder(graph, track_layout)
    _convert(b, [nodes[n] for n in order if n not in {f for f, _ in feeds}], values, feeds, name)
    for node_name, port in out_tensors:
        if (node_name, port) not in values:
            raise ModelLoadError(f"{name}: output '{value_name(node_name, port)}' is not produced "
                                 f"(node '{node_name}' is {nodes[node_name].op})")
        graph.outputs.append(_named_output(b, values[(node_name, port)], value_name(node_name, port)))
    return graph


def _convert(b: Builder, order, values: dict, feeds, model_name: str) -> None:
    """Convert the nodes in order; values maps (TF node, port) -> Value and grows."""
    from . import tensorflow_ops, tensorflow_shape_ops  # noqa: F401 (they register their converters)
    from .tensorflow_registry import convert
    for n in order:
        if n.op == "Placeholder":
            raise ModelLoadError(f"{model_name}: Placeholder '{n.name}' is needed but not among the inputs "
                                 f"{', '.join(value_name(*t) for t in feeds)}")
        ins = []
        for ref in n.input:
            if ref.startswith("^"):
                continue
            if split_tensor(ref) not in values:
                raise ModelLoadError(f"{model_name}: node '{n.name}' ({n.op}) reads '{ref}', which its "
                                     "producer does not define")
            ins.append(values[split_tensor(ref)])
        b.node = n
        for port, v in enumerate(convert(b, n, ins, model_name)):
            if v is not None:
                values[(n.name, port)] = v
    b.node = None


def _pick_outputs(gd, nodes, outputs, name) -> list[tuple[str, int]]:
    if outputs is not None:
        picked = [split_tensor(t) for t in outputs]
        for node_name, _ in picked:
            if node_name not in nodes:
                raise ModelLoadError(f"{name}: output '{node_name}' is not a node of the graph")
        return picked
    read = {split_tensor(ref)[0] for n in gd.node for ref in n.input if not ref.startswith("^")}
    sinks = [(n.name, 0) for n in gd.node if n.name not in read and n.op not in SKIPPED_SINKS]
    if not sinks:
        raise ModelLoadError(f"{name}: the graph has no output (no node whose result nobody reads); "
                             "name the outputs")
    return sinks


def _topological(nodes, targets, cut, model_name) -> list[str]:
    """Names of the nodes the targets need (data inputs only; stopping at `cut`), producers first."""
    order, state = [], {}
    for target in targets:
        stack = [(target, False)]
        while stack:
            n, done = stack.pop()
            if done:
                state[n] = 2
                order.append(n)
                continue
            if state.get(n) == 2:
                continue
            if state.get(n) == 1:
                raise ModelLoadError(f"{model_name}: the graph has a cycle through node '{n}'")
            if n not in nodes:
                raise ModelLoadError(f"{model_name}: node '{n}' is read but not defined")
            state[n] = 1
            stack.append((n, True))
            if n not in cut:
                for ref in reversed(nodes[n].input):
                    if not ref.startswith("^"):
                        dep = split_tensor(ref)[0]
                        if state.get(dep) != 2:
                            stack.append((dep, False))
    return order


def _graph_input(graph: Graph, n, port: int, model_name: str) -> Value:
    where = f"input '{n.name}' of {model_name}"
    code = attr(n, "dtype") if n.op in ("Placeholder", "PlaceholderWithDefault") else attr(n, "T")
    if code is None:
        raise ModelLoadError(f"{model_name}: cannot tell the dtype of input '{n.name}' ({n.op})")
    shape = attr(n, "shape")
    if shape is None and "_output_shapes" in n.attr:
        shapes = n.attr["_output_shapes"].list.shape
        if port < len(shapes) and not shapes[port].unknown_rank:
            shape = [int(d.size) for d in shapes[port].dim]
    dims = None if shape is None else tuple(d if d >= 0 else f"{n.name}_d{i}" for i, d in enumerate(shape))
    return graph.add_input(value_name(n.name, port), np_dtype(code, where), dims)


def _named_output(b: Builder, v: Value, name: str) -> Value:
    """The output value under its TF name: an Identity when the value has another name (passes rename
    the producer's output when they can) or is already an input or output."""
    if v.name == name and v.producer is not None and v not in b.graph.outputs:
        return v
    b.node = None
    node = b.graph.add_node("Identity", [v], [b.graph.fresh_name(name)], name=name)
    node.outputs[0].dtype, node.outputs[0].shape = v.dtype, v.shape
    return node.outputs[0]

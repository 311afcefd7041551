"""An ATen FX graph (AOTAutograd's inference graph, or one partition of it) -> ge's ir.Graph, no ONNX between.

Step 1: placeholders. A frozen one (a parameter or buffer of the module) becomes a constant whose array is a
        numpy view of the module's tensor (no copy; passes that repack weights make their own layouts);
        the others become graph inputs, typed from the fake tensors AOTAutograd traced. A get_attr tensor
        (one the traced code made, DeBERTa's torch.tensor(...)) becomes a copied constant.
Step 2: call_function nodes in order, each through its converter (registry.py); `getitem` picks an output
        of a multi-output converter. Every result gets the dtype and static shape torch traced, and a
        converter whose result disagrees with torch's dtype or shape is refused (Unsupported), never run.
Step 3: outputs. A result ge computes is a graph output (an Identity where the same value is returned
        twice or is an input); results that are inputs or constants are handed back by the caller
        (runtime.py) without ge.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.fx.node import map_arg

from ..ir import Graph, Value
from . import ops_nn, ops_tensor  # noqa: F401 (they fill the registry)
from .registry import CONVERTERS, Builder, Unsupported, np_dtype, op_name, static_shape


@dataclass
class Output:
    """Where result k of the FX graph comes from: ge's output `index`, placeholder `arg`, or `const`."""
    kind: str                      # "ge" | "arg" | "const" | "none"
    index: int = -1                # ge output / placeholder position (a const: its frozen placeholder, or -1)
    const: torch.Tensor | None = None


@dataclass
class Converted:
    graph: Graph
    feeds: list[tuple[int, str]] = field(default_factory=list)    # (placeholder position, ge input name)
    outputs: list[Output] = field(default_factory=list)
    out_specs: list[tuple[tuple, torch.dtype]] = field(default_factory=list)   # ge outputs' shape, dtype


def tensor_view(t: torch.Tensor, where: str) -> np.ndarray:
    """A CPU tensor's memory as a numpy array (a view when contiguous, else one copy)."""
    np_dtype(t.dtype, where)
    if t.device.type != "cpu":
        raise Unsupported(f"{where} is on device {t.device}")
    t = t.detach()
    return (t if t.is_contiguous() else t.contiguous()).numpy()


def convert(gm: torch.fx.GraphModule, frozen: dict[int, torch.Tensor], name: str) -> Converted:
    graph = Graph(name, {"": 17, "ge": 1})
    b = Builder(graph)
    out = Converted(graph)
    env: dict[torch.fx.Node, object] = {}
    # Step 1: placeholders
    position = 0
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        val = node.meta.get("val")
        if position in frozen:
            v = graph.add_const(node.name, tensor_view(frozen[position], f"parameter '{node.name}'"))
            b.typed(v, val)
        elif node.users:
            v = graph.add_input(node.name, None, None)
            b.typed(v, val)
            out.feeds.append((position, v.name))
        else:
            v = None
        if v is not None:
            b.vals[id(v)] = val
        env[node] = v
        position += 1
    # Step 2: nodes
    for node in gm.graph.nodes:
        if node.op == "call_function":
            env[node] = convert_node(b, node, env)
        elif node.op == "get_attr":   # a tensor the traced code made (DeBERTa's torch.tensor(...)): a constant
            env[node] = _attr_const(b, gm, node)
        elif node.op == "output":
            _outputs(b, out, node, env, frozen)
        elif node.op not in ("placeholder",):
            raise Unsupported(f"FX node '{node.name}' is a {node.op} (ATen graphs call functions only)")
    graph.prune_values()
    return out


def _attr_const(b: Builder, gm: torch.fx.GraphModule, node: torch.fx.Node) -> Value:
    t = gm
    for part in node.target.split("."):
        t = getattr(t, part)
    if not isinstance(t, torch.Tensor):
        raise Unsupported(f"FX node '{node.name}' reads a {type(t).__name__}, not a tensor")
    v = b.graph.add_const(node.name, np.array(tensor_view(t, f"constant '{node.name}'")))   # gm's: a copy
    v.dtype, v.shape = np_dtype(t.dtype, node.name), tuple(t.shape)
    b.vals[id(v)] = t
    return v


def convert_node(b: Builder, node: torch.fx.Node, env: dict):
    """The Value (or list of Values) of one call_function node."""
    if node.target is operator.getitem:
        src, k = env[node.args[0]], node.args[1]
        item = src[k] if isinstance(src, (list, tuple)) else None
        if item is None:
            raise Unsupported(f"output {k} of {node.args[0].target} (not computed by ge)")
        return item
    key = op_name(node.target)
    fn = CONVERTERS.get(key)
    if fn is None:
        raise Unsupported(f"no converter for {key}")
    for n in node.all_input_nodes:   # the operands' fake tensors, for converters' type promotion
        if isinstance(env.get(n), Value):
            b.vals[id(env[n])] = n.meta.get("val")
    args = map_arg(node.args, lambda n: _need(env, n))
    kwargs = map_arg(node.kwargs, lambda n: _need(env, n))
    b.node = node
    result = fn(b, *args, **kwargs)
    val = node.meta.get("val")
    if isinstance(val, (list, tuple)):
        if not isinstance(result, (list, tuple)) or len(result) != len(val):
            raise Unsupported(f"converter of {key} gave {result!r:.60} for {len(val)} results")
        for v, mv in zip(result, val):
            if v is not None:
                _check_type(b, v, mv, key)
        return list(result)
    if not isinstance(result, Value):
        raise Unsupported(f"converter of {key} gave {type(result).__name__}, not a value")
    _check_type(b, result, val, key)
    return result


def _check_type(b: Builder, v: Value, val, key: str) -> None:
    """v takes torch's dtype and shape; a converter whose value already says otherwise is refused."""
    dtype, shape = np_dtype(val.dtype, f"the result of {key}"), static_shape(val, key)
    if v.dtype is not None and v.dtype != dtype:
        raise Unsupported(f"converter of {key} computes {v.dtype}, torch {dtype}")
    if v.shape is not None and tuple(v.shape) != shape:
        raise Unsupported(f"converter of {key} computes shape {v.shape}, torch {shape}")
    v.dtype, v.shape = dtype, shape
    b.vals[id(v)] = val


def _need(env, n):
    v = env[n]
    if v is None:
        raise Unsupported(f"'{n.name}' is not available to ge")
    return v


def _outputs(b: Builder, out: Converted, node, env, frozen) -> None:
    placeholders = {n: k for k, n in enumerate(x for x in node.graph.nodes if x.op == "placeholder")}
    results = node.args[0] if isinstance(node.args[0], (list, tuple)) else [node.args[0]]
    g = b.graph
    for r in results:
        if r is None:
            out.outputs.append(Output("none"))
            continue
        if r in placeholders:
            k = placeholders[r]
            out.outputs.append(Output("const", k, frozen[k]) if k in frozen else Output("arg", k))
            continue
        v = env[r]
        if not isinstance(v, Value):
            raise Unsupported(f"output '{r.name}' is not one tensor")
        if v.const is not None:
            out.outputs.append(Output("const", const=torch.from_numpy(np.array(v.const))))
            continue
        if v.producer is None or v in g.outputs:   # an input, or a value returned twice: its own name
            b.node = r
            ident = b.op("Identity", [v])
            ident.dtype, ident.shape = v.dtype, v.shape
            v = ident
        out.outputs.append(Output("ge", len(g.outputs)))
        out.out_specs.append((tuple(v.shape), r.meta["val"].dtype))
        g.outputs.append(v)

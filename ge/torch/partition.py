"""Which ATen nodes ge runs: each call is tried through its converter on a scratch graph; the nodes that
convert form partitions (torch.fx's CapabilityBasedPartitioner), the rest stay PyTorch calls between them.

A node left to PyTorch is a graph break: logged once per compile (logger "ge.torch", warning) with the op,
the converter's reason and the model's source line; under `fullgraph=True` it is an UnsupportedOpError
instead. Refused: ops without a converter, arguments a converter does not honour, dtypes ge lacks, tensors
on another device, symbolic sizes (specialize.py makes a graph static before it gets here).
"""
from __future__ import annotations

import logging
import operator
import re

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from ..errors import UnsupportedOpError
from ..ir import Graph
from .convert import convert_node
from .registry import CONVERTERS, Builder, Unsupported, op_name

log = logging.getLogger("ge.torch")


def reasons(gm: torch.fx.GraphModule) -> dict[torch.fx.Node, str]:
    """The call_function nodes ge cannot run, each with why."""
    out, scratch = {}, {}
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        why = _check_vals(node)
        if why is None:
            try:
                scratch[node] = _try(node, scratch)
            except Unsupported as e:
                why = str(e)
            except Exception as e:  # noqa: BLE001 - a converter meeting arguments it was not written for
                why = f"its converter failed ({type(e).__name__}: {e})"
        if why is not None:
            out[node] = why
    return out


def _check_vals(node) -> str | None:
    vals = node.meta.get("val")
    for v in vals if isinstance(vals, (list, tuple)) else [vals]:
        if isinstance(v, torch.Tensor) and v.device.type != "cpu":
            return f"a tensor on device {v.device}"
    for a in node.all_input_nodes:
        v = a.meta.get("val")
        if isinstance(v, torch.Tensor) and v.device.type != "cpu":
            return f"its input '{a.name}' is on device {v.device}"
    return None


def _try(node, scratch):
    """The node converted alone: its inputs as typed graph inputs (a getitem reads its producer's try)."""
    b = Builder(Graph("scratch", {"": 17, "ge": 1}))
    env = {}
    for a in node.all_input_nodes:
        if a in scratch:
            env[a] = scratch[a]
            continue
        val = a.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise Unsupported(f"its input '{a.name}' is a {type(val).__name__}, not a tensor")
        v = b.graph.add_input(a.name, None, None)
        b.typed(v, val)
        b.vals[id(v)] = val
        env[a] = v
    if node.target is operator.getitem and node.args[0] not in scratch:
        raise Unsupported(f"it reads an output of '{node.args[0].name}', which ge does not run")
    return convert_node(b, node, env)


def source_line(node: torch.fx.Node) -> str:
    """The model's line this node came from ("file:line: code"), from the stack Dynamo recorded."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in [^\n]*\n\s*([^\n]*)', trace)
    if not frames:
        return "source line unknown"
    path, line, code = frames[-1]
    return f"{path}:{line}: {code.strip()}"


def graph_breaks(gm: torch.fx.GraphModule, why: dict, fullgraph: bool) -> None:
    """Log each op ge leaves to PyTorch, or raise the first under fullgraph=True."""
    for node, reason in why.items():
        op = op_name(node.target)
        if fullgraph:
            raise UnsupportedOpError(op.removeprefix("aten."), "aten", 0, node.name, sorted(CONVERTERS),
                                     f"{reason}; from {source_line(node)} (fullgraph=True: no graph break)")
        log.warning("ge.torch: graph break at %s (node '%s'): %s; from %s. It runs in PyTorch.", op, node.name,
                    reason, source_line(node))


class _Supported(OperatorSupportBase):
    def __init__(self, refused):
        self.refused = refused

    def is_node_supported(self, submodules, node) -> bool:
        return node.op == "call_function" and node not in self.refused


def split(gm: torch.fx.GraphModule, refused: dict) -> torch.fx.GraphModule:
    """gm with each run of supported nodes moved into a submodule `fused_<k>` (called from gm's graph);
    the submodules' placeholders carry the fake tensors of the values they receive."""
    partitioner = CapabilityBasedPartitioner(gm, _Supported(refused), allows_single_node_partition=True)
    fused = partitioner.fuse_partitions(partitioner.propose_partitions())
    for node in fused.graph.nodes:
        if node.op == "call_module":
            sub = getattr(fused, node.target)
            phs = [n for n in sub.graph.nodes if n.op == "placeholder"]
            for ph, arg in zip(phs, node.args):
                ph.meta["val"] = arg.meta.get("val")
    return fused

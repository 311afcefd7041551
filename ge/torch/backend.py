"""The Dynamo backend: `torch.compile(model, backend="ge")` or `backend=ge.torch.get_backend(config)`.

Step 1: Dynamo hands over its FX graph and example inputs. Training (grad enabled and an input requiring
        grad) is left to PyTorch: ge compiles inference graphs. The placeholders that are the module's
        parameters and buffers (their Dynamo source says so) are marked frozen.
Step 2: AOTAutograd's inference path functionalizes the graph and decomposes it into core ATen
        (torch._decomp.core_aten_decompositions); its inference compiler is `_compile_aten` below.
Step 3: each ATen node is tried through its converter (partition.py). All convert: one GeGraph (runtime.py)
        runs the whole graph. Some do not: a graph break each, logged with the reason (an UnsupportedOpError
        under fullgraph=True), and the graph runs as PyTorch calls between GeGraph partitions. A graph with
        symbolic sizes (Dynamo's dynamic shapes) is made static per set of input shapes first (specialize.py),
        or, with set_dim_gears on its inputs, compiled once for all the gears (gears.py).
"""
from __future__ import annotations

import functools
import logging

import torch
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd

from ..errors import GEError, UnsupportedOpError
from .config import CompilerConfig
from .gears import guard, input_gears
from .partition import graph_breaks, reasons, split
from .runtime import GearedGraph, GeGraph
from .specialize import PerShape

log = logging.getLogger("ge.torch")
WATCHERS: list = []   # ge.torch.explain's recorders: told of each graph break and each GeGraph made


def get_backend(config: CompilerConfig | None = None):
    """A Dynamo backend compiling with `config` (TorchAir's get_npu_backend(compiler_config=...))."""
    return functools.partial(backend, config=config)


def backend(gm: torch.fx.GraphModule, example_inputs, config: CompilerConfig | None = None, **_):
    """The backend registered as "ge" (entry point group torch_dynamo_backends)."""
    config = config or CompilerConfig()
    fullgraph = _fullgraph()
    # Step 1
    if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in example_inputs):
        why = "an input requires grad with grad enabled (ge compiles inference: run under torch.no_grad())"
        if fullgraph:
            raise UnsupportedOpError("autograd", "aten", 0, gm.__class__.__name__, [], why)
        log.warning("ge.torch: graph left to PyTorch: %s", why)
        return gm.forward
    frozen = [k for k, node in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")
              if config.frozen_parameters and _is_parameter(node)]
    gears = input_gears(example_inputs)   # set_dim_gears (gears.py), by position from the end
    # Step 2
    compile_aten = functools.partial(_compile_aten, config=config, frozen=frozen, fullgraph=fullgraph,
                                     n_inputs=len(example_inputs), gears=gears)
    return aot_autograd(fw_compiler=compile_aten, inference_compiler=compile_aten,
                        decompositions=core_aten_decompositions())(gm, example_inputs)


def _compile_aten(gm: torch.fx.GraphModule, example_inputs, *, config, frozen, fullgraph, n_inputs, gears):
    # AOTAutograd keeps the inputs in Dynamo's order unless it deduplicated them: then nothing is frozen
    if len(example_inputs) != n_inputs:
        frozen = []
    build = functools.partial(_build, frozen=frozen, config=config, fullgraph=fullgraph)
    if gears and _symbolic(gm):   # set_dim_gears: one GearPlans over the gears (gears.py)
        if config.mode != "max-autotune":
            raise GEError("set_dim_gears runs on mode='max-autotune' (runtime_v1's gears), as TorchAir's "
                          f"gears do; CompilerConfig has mode={config.mode!r}")
        geared, varying = guard(example_inputs, gears)
        if geared:
            return _made(GearedGraph(gm, frozen, config, "torch_graph", inputs=list(example_inputs),
                                     geared=geared, varying=varying, fullgraph=fullgraph,
                                     per_shape=lambda: PerShape(gm, build)))
    if _symbolic(gm):   # Dynamo's dynamic shapes: one static graph per set of input shapes (specialize.py)
        return PerShape(gm, build)
    return build(gm)


def _build(gm: torch.fx.GraphModule, *, frozen, config, fullgraph):
    """Step 3: one GeGraph for gm, or gm split into GeGraph partitions around the nodes ge leaves to torch."""
    refused = reasons(gm)
    graph_breaks(gm, refused, fullgraph)
    for watch in WATCHERS:   # ge.torch.explain
        watch.broke(refused)
    if not refused:
        return _made(GeGraph(gm, frozen, config, "torch_graph"))
    fused = split(gm, refused)
    placeholders = {n: k for k, n in enumerate(n for n in fused.graph.nodes if n.op == "placeholder")}
    for node in fused.graph.nodes:
        if node.op == "call_module":
            sub = getattr(fused, node.target)
            sub_frozen = [i for i, a in enumerate(node.args) if placeholders.get(a, -1) in frozen]
            setattr(fused, node.target, _made(GeGraph(sub, sub_frozen, config, f"torch_{node.target}")))
    fused.recompile()
    return fused


def _made(g: GeGraph) -> GeGraph:
    for watch in WATCHERS:
        watch.made(g)
    return g


def _symbolic(gm: torch.fx.GraphModule) -> bool:
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            val = node.meta.get("val")
            if isinstance(val, torch.SymInt) or isinstance(val, torch.Tensor) and \
                    any(not isinstance(d, int) for d in val.shape):
                return True
    return False


def _is_parameter(node: torch.fx.Node) -> bool:
    """A placeholder Dynamo lifted from a module's _parameters or _buffers."""
    source = getattr(node, "_dynamo_source", None) or getattr(node.meta.get("grapharg"), "source", None)
    name = source.name if source is not None else ""
    name = name() if callable(name) else name
    return "._parameters[" in name or "._buffers[" in name


def _fullgraph() -> bool:
    """Whether Dynamo traces under fullgraph=True (no graph break allowed)."""
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator
        tx = InstructionTranslator.current_tx()
        return bool(getattr(tx, "one_graph", False) or getattr(tx, "error_on_graph_break", False))
    except Exception:  # noqa: BLE001 - a private API: without it, graph breaks are logged
        return False

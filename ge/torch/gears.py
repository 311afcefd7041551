"""set_dim_gears: gears over chosen dims of a compiled torch graph (TorchAir's torchair.inference.set_dim_gears)
-> ge's dims gears (GE's ge.dynamicDims: one static plan per gear, one feature map and one weight image
shared between them, runtime_v1/gears.py).

Marking: `set_dim_gears(t, {dim: [sizes]})` checks TorchAir's rules (a dim of t; 2 to 100 integer sizes, each
>= 2, since Dynamo specializes sizes 0 and 1; gears set twice must agree), marks those dims dynamic for Dynamo
(mark_dynamic) and keeps the gears on the tensor (`t.dim_gears`). Set them on the first call's inputs.

Step 1 (backend.py, Dynamo's real example inputs): each input's gears, by its position from the end
        (AOTAutograd keeps the order; counting from the end is TorchAir's way too).
Step 2 (AOTAutograd's graph, symbolic sizes): guards. A geared dim must be one of its gears (TorchAir's
        guards: within the smallest and largest gear, and not strictly between two neighbours); every other
        dim is made static, unless Dynamo tied it to a geared dim (an attention mask's sequence: it follows). Dynamo checks the guards at every call: a size outside the gears fails them and
        Dynamo compiles the frame again; there an input that still carries gears is an InputError naming
        the dim and its gears (TorchAir's "not within the range"), an input without gears compiles like
        any new shape (specialize.py).
Step 3: the gears: the geared dims' lists zipped (dynamic_gears_merge_policy "zip", TorchAir's default: lists
        of one length) or their product ("product"); entries that give one Dynamo symbol two sizes dropped;
        at most 100 (GE's limit).
Step 4 (first call, where the frozen tensors are at hand): per gear, the graph made static at that gear's
        sizes (make_fx over fake tensors), converted whole and compiled to a static plan; the plans become
        one GearPlans on runtime_v1. A graph break at any gear: gears need the whole graph (as TorchAir's):
        an UnsupportedOpError under fullgraph=True, else a warning and one static graph per shape.
A run takes the gear its inputs' shapes match exactly (GE's rule for dims gears: nothing is padded, since a
padded sequence would change a softmax over it).
"""
from __future__ import annotations

import itertools
import logging

import torch
from torch.fx.experimental.symbolic_shapes import guard_bool, guard_int

from ..compiler import compile as compile_plan
from ..compiler import dims_gear_plans
from ..errors import GEError, InputError, UnsupportedOpError
from ..plan import host_driven
from .convert import convert
from .partition import reasons, source_line
from .registry import op_name
from .specialize import retrace

log = logging.getLogger("ge.torch")
MAX_GEARS = 100          # GE's ge.dynamicDims limit, and TorchAir's per dim
MERGE_POLICIES = ("zip", "product")


def set_dim_gears(t: torch.Tensor, dim_gears: dict) -> None:
    """Gears over dims of `t`: `{dim: [size, ...]}`; torch.compile(backend=ge) compiles one plan per gear."""
    if not isinstance(t, torch.Tensor):
        raise GEError(f"set_dim_gears takes a torch.Tensor, got {type(t).__name__}")
    if not isinstance(dim_gears, dict) or not dim_gears:
        raise GEError(f"set_dim_gears: dim_gears must be a non-empty dict {{dim: [sizes]}}, got {dim_gears!r:.60}")
    clean = {}
    for dim, gears in dim_gears.items():
        if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < t.dim():
            raise GEError(f"set_dim_gears: dim {dim!r} is not a dim of a {t.dim()}-d tensor (0 to {t.dim() - 1})")
        if not isinstance(gears, (list, tuple)) or \
                not all(isinstance(g, int) and not isinstance(g, bool) for g in gears):
            raise GEError(f"set_dim_gears: the gears of dim {dim} must be a list or tuple of ints, got {gears!r:.60}")
        if not 2 <= len(gears) <= MAX_GEARS:
            raise GEError(f"set_dim_gears: dim {dim} needs 2 to {MAX_GEARS} gears, got {len(gears)}")
        if min(gears) < 2:
            raise GEError(f"set_dim_gears: dim {dim} has gear {min(gears)}; gears must be >= 2 (Dynamo "
                          "specializes sizes 0 and 1 and compiles them apart)")
        if len(set(gears)) != len(gears):
            raise GEError(f"set_dim_gears: dim {dim} repeats a gear: {list(gears)}")
        clean[dim] = tuple(gears)
    old = get_dim_gears(t)
    if old is not None and old != clean:
        raise GEError(f"set_dim_gears: this tensor already has gears {old}; setting other gears ({clean}) is "
                      "refused, as TorchAir does")
    for dim in clean:
        torch._dynamo.mark_dynamic(t, dim)
    t.dim_gears = clean


def get_dim_gears(t) -> dict | None:
    return getattr(t, "dim_gears", None)


def input_gears(example_inputs) -> dict[int, dict]:
    """Step 1: {position from the end: gears} of the inputs that carry gears."""
    n = len(example_inputs)
    return {k - n: g for k, t in enumerate(example_inputs)
            if isinstance(t, torch.Tensor) and (g := get_dim_gears(t))}


def guard(inputs, gears: dict[int, dict]) -> tuple[list, list]:
    """Step 2: the guards; returns the geared dims as (input position, dim, gears), and every dim whose size
    follows the gears, (input position, dim): the geared ones, then those Dynamo tied to them."""
    geared, symbols = [], set()
    tensors = [(pos, t) for pos, t in enumerate(inputs) if isinstance(t, torch.Tensor)]
    for pos, t in tensors:
        own = gears.get(pos - len(inputs), {})
        for dim, size in enumerate(t.shape):
            if dim in own:
                _guard_gear(size, own[dim], pos, dim)
                geared.append((pos, dim, own[dim]))
                symbols |= _symbols(size)
    varying = [(pos, dim) for pos, dim, _ in geared]
    for pos, t in tensors:   # the rest static, but a dim Dynamo tied to a geared one follows its gears
        own = gears.get(pos - len(inputs), {})
        for dim, size in enumerate(t.shape):
            if dim in own or isinstance(size, int):
                continue
            if _symbols(size) & symbols:
                varying.append((pos, dim))
            else:
                guard_int(size)
    return geared, varying


def _symbols(size) -> set:
    return set(size.node.expr.free_symbols) if isinstance(size, torch.SymInt) else set()


def _guard_gear(size, gears, pos: int, dim: int) -> None:
    value = size if isinstance(size, int) else size.node.hint
    if value not in gears:
        raise InputError(f"set_dim_gears: input {pos} has size {value} on dim {dim}, which is not one of its "
                         f"gears {list(gears)}")
    if isinstance(size, int):
        return
    ordered = sorted(gears)
    guard_bool((size >= ordered[0]) & (size <= ordered[-1]))
    for left, right in zip(ordered, ordered[1:]):
        guard_bool((size <= left) | (size >= right))


def entries(inputs, geared, varying, policy: str) -> list[tuple[tuple, dict]]:
    """Step 3: [(gear: the sizes of the `varying` dims in order, {sympy symbol: size})]."""
    if policy not in MERGE_POLICIES:
        raise GEError(f"CompilerConfig dynamic_gears_merge_policy must be one of {', '.join(MERGE_POLICIES)}, "
                      f"got {policy!r}")
    lists = [g for _, _, g in geared]
    if policy == "zip":
        if len({len(g) for g in lists}) > 1:
            raise GEError("set_dim_gears with dynamic_gears_merge_policy 'zip' pairs the k-th gears of every "
                          f"geared dim: the lists must be as long, got {[list(g) for g in lists]} (or use 'product')")
        combos = list(zip(*lists))
    else:
        combos = list(itertools.product(*lists))
    out, seen = [], set()
    for combo in combos:
        binding = {}
        for (pos, dim, _), size in zip(geared, combo):
            d = inputs[pos].shape[dim]
            sym = d.node.expr if isinstance(d, torch.SymInt) else None
            if sym is not None and binding.setdefault(sym, size) != size:
                break   # one symbol, two sizes: the graph cannot take this combination
        else:
            gear = tuple(_size(inputs[pos].shape[dim], binding) for pos, dim in varying)
            if gear not in seen:
                seen.add(gear)
                out.append((gear, binding))
    if len(out) > MAX_GEARS:
        raise GEError(f"set_dim_gears: {len(out)} gears after merging ({policy}); at most {MAX_GEARS}")
    return out


def _size(d, binding: dict) -> int:
    """A symbolic size at one gear: the gear's sizes for its symbols, the traced value for the others."""
    if isinstance(d, int):
        return d
    expr, env = d.node.expr, d.node.shape_env
    traced = getattr(env, "backed_var_to_val", None) or env.var_to_val   # renamed in torch 2.13
    return int(expr.xreplace({s: binding.get(s, traced.get(s)) for s in expr.free_symbols}))


class GearBreak(Exception):
    """A node of some gear's graph that ge does not convert (gears need the whole graph)."""


def compile_gears(gm, inputs, geared, varying, policy: str, args, frozen: dict, config, name: str):
    """Step 4: (GearPlans, {gear: Converted}) for the real `args` of the first call."""
    static_opts = config.session_options()
    convs, plans = {}, {}
    for gear, binding in entries(inputs, geared, varying, policy):
        gear_args = []
        for k, (fake, real) in enumerate(zip(inputs, args)):
            if k in frozen:
                gear_args.append(real)
            elif isinstance(fake, torch.Tensor):
                gear_args.append(torch.empty([_size(d, binding) for d in fake.shape], dtype=fake.dtype))
            else:
                gear_args.append(_size(fake, binding) if isinstance(fake, torch.SymInt) else real)
        static = retrace(gm, gear_args)
        refused = reasons(static)
        if refused:
            node, why = next(iter(refused.items()))
            raise GearBreak(f"at gear {list(gear)}: {op_name(node.target)} (node '{node.name}'): {why}; from "
                            f"{source_line(node)}")
        conv = convert(static, frozen, name)
        plan = compile_plan(conv.graph, static_opts)
        if host_driven(plan):
            raise GearBreak(f"at gear {list(gear)}: node '{host_driven(plan)[0].name}' keeps shapes known only "
                            "at run time")
        convs[gear], plans[gear] = conv, plan
    first = next(iter(convs.values()))
    for gear, conv in convs.items():   # one Session serves all gears: the same inputs and outputs by name
        if conv.feeds != first.feeds or [o.name for o in conv.graph.outputs] != \
                [o.name for o in first.graph.outputs] or [o.kind for o in conv.outputs] != \
                [o.kind for o in first.outputs]:
            raise GearBreak(f"the graph at gear {list(gear)} differs from gear {list(next(iter(convs)))} in its "
                            "inputs or outputs")
    if not first.graph.outputs:
        raise GearBreak("ge computes none of the graph's results")
    names = dict((pos, n) for pos, n in first.feeds)
    holes = tuple((names[pos], dim) for pos, dim in varying if pos in names)
    if len(holes) != len(varying):
        raise GearBreak("an input whose dims follow the gears is not read by ge")
    top = plans[max(plans)]
    declared = ([tuple(f"{t.name}_{a}" if (t.name, a) in holes else d for a, d in enumerate(t.shape))
                 for t in (top.tensors[i] for i in top.inputs)], [None] * len(top.outputs))
    return dims_gear_plans(plans, holes, declared), convs


def refuse(why: str, fullgraph: bool, gm) -> None:
    """A gear that does not convert whole: an error under fullgraph=True, else a warning."""
    if fullgraph:
        raise UnsupportedOpError("set_dim_gears", "aten", 0, gm.__class__.__name__, [],
                                 f"gears need the whole graph in ge; {why} (fullgraph=True: no graph break)")
    log.warning("ge.torch: set_dim_gears: gears need the whole graph in ge; %s. Compiling one static graph "
                "per shape instead.", why)

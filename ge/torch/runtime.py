"""One ATen graph (or partition) as a ge Session, called with torch tensors.

Step 1 (first call): convert the graph (convert.py) with the frozen placeholders' tensors as constants, and
        compile it into a Session on the config's runtime. Compiling at the first call has the real tensors
        at hand: the frozen ones are read in place, never copied by the import.
Step 2 (every call): the frozen tensors must be the ones compiled (same storage, same version counter:
        `param.data.mul_(2)` or `load_state_dict` bumps it); otherwise the graph is compiled again first,
        so a stale weight is never used. Feeds are numpy views of the contiguous CPU tensors (zero copy).
Step 3: outputs. runtime_v1 computes into tensors torch allocated (bound outputs: zero copy); runtime_v2's
        results are arrays no later run writes (docs/replays.md), handed to torch by torch.from_numpy.
"""
from __future__ import annotations

import logging

import torch

from ..api import Session
from ..compiler import compile as compile_plan
from ..errors import InputError
from .config import CompilerConfig
from .convert import convert

log = logging.getLogger("ge.torch")


class GeGraph(torch.nn.Module):
    """Callable like the FX graph it compiles: positional tensors in, its results out (a tuple when the
    graph returns one)."""

    def __init__(self, gm: torch.fx.GraphModule, frozen: list[int], config: CompilerConfig, name: str):
        super().__init__()
        self.gm, self.frozen, self.config, self.name = gm, list(frozen), config, name
        out = next(n for n in gm.graph.nodes if n.op == "output")
        self.returns_tuple = isinstance(out.args[0], (list, tuple))
        self.session = None
        self.convs: dict = {}    # {gear (() without gears): Converted}
        self.stamps: list[tuple[int, int]] = []
        self.compiles = 0
        self.cache_hit = False   # the plan came from CompilerConfig.cache_dir

    def build(self, frozen: dict, args):
        """(Plan | GearPlans | None, {gear: Converted}): the graph converted and compiled."""
        conv = convert(self.gm, frozen, self.name)
        plan = compile_plan(conv.graph, self.config.session_options()) if conv.graph.outputs else None
        return plan, {(): conv}

    def gear(self, args) -> tuple:
        return ()

    def gear_keys(self) -> list | None:
        """The gears build() compiles (None: one graph, no gears)."""
        return None

    def _compile(self, args) -> None:
        from .cache import cached_build   # the compile cache across processes (CompilerConfig.cache_dir)
        frozen = {k: args[k] for k in self.frozen}
        model, self.convs, self.cache_hit = cached_build(self, frozen, args)
        if self.session is not None:
            self.session.close()
        self.session = None
        if model is not None:
            self.session = Session(model, runtime=self.config.runtime, options=self.config.session_options())
            self.out_names = [o.name for o in self.session.get_outputs()]
        self.stamps = [_stamp(args[k]) for k in self.frozen]
        self.compiles += 1

    def forward(self, *args):
        # Step 1 / 2
        if not self.convs or any(_stamp(args[k]) != s for k, s in zip(self.frozen, self.stamps)):
            if self.convs:
                log.info("ge.torch: a frozen parameter of %s changed since it was compiled: compiling again",
                         self.name)
            self._compile(args)
        conv = self.convs.get(self.gear(args))
        if conv is None:
            raise InputError(f"ge.torch: {self.name} has no gear for input shapes "
                             f"{[tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]}; gears "
                             f"{[list(g) for g in self.convs]}")
        results = []
        if self.session is not None:
            feeds = {name: _view(args[k]) for k, name in conv.feeds}
            if self.config.runtime == "v1":   # Step 3: straight into torch's tensors
                outs = [torch.empty(shape, dtype=dt) for shape, dt in conv.out_specs]
                self.session.run(None, feeds, outputs={n: t.numpy() for n, t in zip(self.out_names, outs)})
            else:
                outs = [torch.from_numpy(a) for a in self.session.run(None, feeds)]
            results = outs
        values = []
        for o in conv.outputs:
            if o.kind == "ge":
                values.append(results[o.index])
            elif o.kind == "arg":
                values.append(args[o.index])
            elif o.kind == "const":
                values.append((args[o.index] if o.index >= 0 else o.const).clone())
            else:
                values.append(None)
        return tuple(values) if self.returns_tuple else values[0]


class GearedGraph(GeGraph):
    """A graph with gears over dims (gears.py): one GearPlans on runtime_v1, a run picks its gear by shape;
    a graph that does not convert whole at some gear falls back to one static graph per shape."""

    def __init__(self, gm, frozen, config, name, *, inputs, geared, varying, fullgraph, per_shape):
        super().__init__(gm, frozen, config, name)
        self.inputs, self.geared, self.varying = inputs, geared, varying
        self.fullgraph, self.per_shape = fullgraph, per_shape
        self.fallback = None

    def build(self, frozen, args):
        from .gears import compile_gears
        return compile_gears(self.gm, self.inputs, self.geared, self.varying, self.config.dynamic_gears_merge_policy,
                             args, frozen, self.config, self.name)

    def gear(self, args) -> tuple:
        return tuple(args[pos].shape[dim] for pos, dim in self.varying)

    def gear_keys(self) -> list:
        from .gears import entries
        return [gear for gear, _ in entries(self.inputs, self.geared, self.varying,
                                            self.config.dynamic_gears_merge_policy)]

    def forward(self, *args):
        if self.fallback is None and not self.convs:
            from .gears import GearBreak, refuse
            try:
                self._compile(args)
            except GearBreak as e:
                refuse(str(e), self.fullgraph, self.gm)
                self.fallback = self.per_shape()
        if self.fallback is not None:
            return self.fallback(*args)
        return super().forward(*args)


def _stamp(t: torch.Tensor) -> tuple[int, int]:
    return t.data_ptr(), t._version


def _view(t: torch.Tensor):
    t = t.detach()
    return (t if t.is_contiguous() else t.contiguous()).numpy()

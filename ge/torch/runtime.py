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
        self.session = self.conv = None
        self.stamps: list[tuple[int, int]] = []
        self.compiles = 0

    def _compile(self, args) -> None:
        frozen = {k: args[k] for k in self.frozen}
        self.conv = convert(self.gm, frozen, self.name)
        if self.session is not None:
            self.session.close()
        self.session = None
        if self.conv.graph.outputs:
            self.session = Session(self.conv.graph, runtime=self.config.runtime,
                                   options=self.config.session_options())
            self.out_names = [o.name for o in self.session.get_outputs()]
        self.stamps = [_stamp(args[k]) for k in self.frozen]
        self.compiles += 1

    def forward(self, *args):
        # Step 1 / 2
        if self.conv is None or any(_stamp(args[k]) != s for k, s in zip(self.frozen, self.stamps)):
            if self.conv is not None:
                log.info("ge.torch: a frozen parameter of %s changed since it was compiled: compiling again",
                         self.name)
            self._compile(args)
        conv = self.conv
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
                values.append(o.const.clone())
            else:
                values.append(None)
        return tuple(values) if self.returns_tuple else values[0]


def _stamp(t: torch.Tensor) -> tuple[int, int]:
    return t.data_ptr(), t._version


def _view(t: torch.Tensor):
    t = t.detach()
    return (t if t.is_contiguous() else t.contiguous()).numpy()

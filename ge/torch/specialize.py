"""A graph Dynamo traced with symbolic sizes, compiled once per set of input shapes.

Dynamo marks a dim dynamic when a second call changes it (automatic dynamic shapes), and `dynamic=True` does
so from the start; ge's plans here are static (set_dim_gears, ge's gears over chosen dims, is the next step).
So the first call of each new set of shapes traces the ATen graph again with torch's make_fx over fake tensors
of those shapes: the SymInt arithmetic folds to ints, and the static graph is built as any other (Step 3 of
backend.py: graph breaks included, logged at that call). Later calls of those shapes reuse it; at most
MAX_SHAPES are kept (least recently used dropped).
"""
from __future__ import annotations

import logging
from collections import OrderedDict

import torch
import torch.fx.traceback as fx_traceback
from torch.fx.experimental.proxy_tensor import make_fx

log = logging.getLogger("ge.torch")
MAX_SHAPES = 16


class PerShape:
    def __init__(self, gm: torch.fx.GraphModule, build):
        self.gm, self.build = gm, build
        self.cache: OrderedDict = OrderedDict()

    def __call__(self, *args):
        key = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)
        fn = self.cache.get(key)
        if fn is None:
            log.info("ge.torch: a new set of input shapes (%d kept): compiling for it", len(self.cache))
            static = retrace(self.gm, args)
            fn = self.cache[key] = self.build(static)
            if len(self.cache) > MAX_SHAPES:
                self.cache.popitem(last=False)
        else:
            self.cache.move_to_end(key)
        return fn(*args)


def retrace(gm: torch.fx.GraphModule, args) -> torch.fx.GraphModule:
    """gm traced again at the shapes of `args` (fake tensors): its SymInts fold to ints. Node by node through
    an Interpreter with node meta preserved, so each new node keeps its source's stream scope (streams.py)."""
    with fx_traceback.preserve_node_meta():
        static = make_fx(torch.fx.Interpreter(gm).run, tracing_mode="fake")(*args)
    static.graph.eliminate_dead_code()   # the retrace keeps unread outputs (layer norm's mean, rstd)
    static.recompile()
    return static

"""One copy of the weights in the process: the plan's constants lent to runtime_v1's weights segment.

An executor copies the plan's constants into its weights segment (model.copy_weights); the plan kept its own
arrays too, so a session held the weights twice (ResNet-50: 97 MiB twice, issue 44). `lend_constants` makes
the plan's constants read-only views of the segment (the same bytes: plan readers such as ge.save, warm-up
and `ge run`'s report see what they saw), and returns the segment's release wrapped: before the segment's
pages go back (released pages read as zeros, or are reserved again by another plan), the plan's constants
get arrays of their own again. Should some other holder still reference a lent view at that point (a second
executor of the same plan, a caller's variable), the segment is not released: it stays mapped while anything
reads it (ge/npu/memory.py unmaps a memory when its last view goes).
"""
from __future__ import annotations

import gc
import sys
from types import MappingProxyType
from typing import Callable

import numpy as np

from .model import copy_weights


# Weights from which the plan's constants are lent. Below it the plan keeps its own arrays beside the segment's
# copy: a few MiB twice cost little, and the segment then goes back at close whatever else holds a constant
# (in the full suite a small model's lent view, held elsewhere, kept its segment reserved after close).
LEND_BYTES = 4 << 20


def lend_constants(plan, buf: np.ndarray, release: Callable[[], None]) -> Callable[[], None]:
    """The plan's constants copied into `buf` (the weights segment, model.copy_weights' layout) and lent: each
    becomes a view of its copy as it is made, so its own array can go at once (the plan held it alone, as when
    a Session compiled it: the peak is one copy plus one constant, not two copies). Returns the release to call
    instead of `release`."""
    if (any(a.dtype.hasobject for a in plan.constants.values())   # string constants (host tasks read the plan)
            or sum(a.nbytes for a in plan.constants.values()) < LEND_BYTES):
        copy_weights(plan, buf)
        return release
    lent, views = dict(plan.constants), {}
    object.__setattr__(plan, "constants", MappingProxyType(lent))
    for t in list(lent):
        a = lent[t]
        off = plan.memory.tensors[t].offset
        b = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        buf[off:off + b.size] = b
        v = buf[off:off + b.size].view(a.dtype).reshape(a.shape)
        v.flags.writeable = False   # a write would change what the loaded plan computes
        lent[t] = views[t] = v
        del a, b

    def give_back() -> None:
        mine = dict(plan.constants)   # another executor of the plan may have lent it its own segment since
        for t in views:
            if mine.get(t) is views[t]:
                mine[t] = views[t].copy()
        object.__setattr__(plan, "constants", MappingProxyType(mine))
        del mine
        read_elsewhere = any(_referenced(v) for v in views.values())
        if read_elsewhere:   # the holder may be cyclic garbage (an executor's, a traceback's): collected, asked again
            gc.collect()
            read_elsewhere = any(_referenced(v) for v in views.values())
        views.clear()
        if not read_elsewhere:
            release()
    return give_back


def _referenced(v: np.ndarray) -> bool:
    """Whether anything but lend_constants' dict holds `v` (the references here: that dict, the caller's
    generator variable, this argument and getrefcount's)."""
    return sys.getrefcount(v) > 4

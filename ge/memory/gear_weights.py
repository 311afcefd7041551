"""One weights layout for all gears (ge.compiler.compile_gears): a constant with the same bytes in several
gears' plans sits at the same offset in each, so runtime_v1/gears.py loads ONE weight image for them all.

Each gear's plan comes from one graph, but folding binds shapes into constants: bert_like's position
embeddings fold to a [seq, hidden] slice per sequence gear, a folded Shape differs per batch. Planned alone
(planner.py, Step 3: constants in index order), every later offset then moves, and the gears needed a whole
weight image each (3 gears of a 13 MiB BERT: 39 MiB). GE shares one weight memory across a model's gears
(its case branches read one set of constants: docs/ge-reference.md §4.4).
  1. Key each constant by its bytes (dtype, shape, content digest) and its occurrence in its plan (two
     equal constants of one plan keep two places: no plan's tensors overlap).
  2. Walk the gears in order, placing each new key after the last (ALIGN-aligned); a key seen in an
     earlier gear keeps that gear's offset.
  3. Each plan's weights-segment tensors (constants and their views) move to their key's offset; its
     segment ends at its own last byte (gaps inside are other gears' constants, never read by it).
"""
from __future__ import annotations

import dataclasses
import hashlib
from types import MappingProxyType

import numpy as np

from ..npu.memory import align_up
from .lifetime import WEIGHTS


def share_weights(plans: dict) -> dict:
    """{gear: plan} -> {gear: plan with the shared weights layout}."""
    at: dict = {}
    end = 0
    out = {}
    for gear, plan in plans.items():
        # Steps 1 and 2
        seen: dict = {}
        place = {}
        for t in sorted(plan.constants):
            a = np.asarray(plan.constants[t])
            digest = hashlib.sha1(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).digest()
            key = (digest, seen.get(digest, 0))
            seen[digest] = key[1] + 1
            if key not in at:
                at[key] = end
                end += align_up(plan.tensors[t].nbytes or 0)
            place[t] = at[key]
        # Step 3
        mem = plan.memory
        index = {m.name: m.index for m in mem.tensors}
        tensors = tuple(dataclasses.replace(m, offset=place[index[m.alias_of] if m.alias_of else m.index])
                        if m.segment == WEIGHTS and m.offset is not None else m for m in mem.tensors)
        size = max((m.offset + (m.bytes or 0) for m in tensors if m.segment == WEIGHTS and m.offset is not None),
                   default=0)
        segments = MappingProxyType({**mem.segments, WEIGHTS: align_up(size)})
        out[gear] = dataclasses.replace(plan, memory=dataclasses.replace(mem, tensors=tensors, segments=segments))
    return out

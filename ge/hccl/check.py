"""The plans of a group agree: every rank must run the same plan (same model, same options but its own
device id), or their collectives would pair tensors that do not belong together. Checked at load: each rank
hashes its plan and the ranks compare hashes through the group (a GEError before any run)."""
from __future__ import annotations

import dataclasses
import hashlib

import numpy as np

from ..errors import GEError


def plan_digest(plan) -> bytes:
    h = hashlib.sha256()
    h.update(plan.summary().encode())
    if plan.options.parallel == "tensor":   # each rank holds its own slices: the model they came from counts
        for n in plan.nodes:
            h.update(str(n.attrs.get("_model", "")).encode())
        opts = dataclasses.replace(plan.options, device_id=-1)
        h.update(repr(opts).encode())
        return h.digest()
    for t in sorted(plan.constants):
        h.update(t.to_bytes(8, "little"))
        h.update(np.ascontiguousarray(plan.constants[t]).reshape(-1).view(np.uint8))
    opts = dataclasses.replace(plan.options, device_id=-1)
    h.update(repr(opts).encode())
    return h.digest()


def check_plans(transport, plan) -> None:
    """GEError on every rank when some rank's plan differs from rank 0's."""
    every = transport.agree(plan_digest(plan), "plan check")
    odd = [r for r, d in enumerate(every) if d != every[0]]
    if odd:
        raise GEError(f"the plans of group '{transport.group}' differ: rank {', '.join(map(str, odd))} loaded "
                      f"another plan than rank 0 ('{plan.name}' here, rank {transport.rank}): every rank must "
                      "compile the same model with the same options")

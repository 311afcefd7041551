"""Run-time-shaped outputs placed on the host (graph outputs) count against the session's device memory cap.

They are plain arrays, not spans of the caching allocator, so nothing else bounded them: a 2 GiB output of a
session capped at 1 GiB was allocated (issue 46). `host_output` refuses one that, with what the device holds
and the graph outputs this run made already (`bufs`), would pass Options.device_memory_bytes: a
DeviceMemoryError naming the tensor, before any allocation.
"""
from __future__ import annotations

import numpy as np

from ge.errors import DeviceMemoryError


def host_output(count: int, dtype, nbytes: int, alloc, plan, tensor: int, bufs) -> np.ndarray:
    device = alloc.device
    made = 0 if len(plan.outputs) < 2 else \
        sum(a.nbytes for t in plan.outputs if t != tensor and isinstance(a := bufs[t], np.ndarray))
    nbytes += made   # this run's other outputs so far (a caller's bound ones too: the check errs safe)
    if nbytes + device.in_use > device.capacity:   # as the allocator's own requests: idle spans back first
        for recycle in (getattr(alloc, "empty_cache", None), getattr(alloc, "on_oom", None)):
            if recycle is not None and nbytes + device.in_use > device.capacity:
                recycle()
    if nbytes + device.in_use > device.capacity:
        with_others = f", with {made} bytes of the run's other outputs" if made else ""
        raise DeviceMemoryError(nbytes, device.capacity, device.in_use,
                                f"output '{plan.tensors[tensor].name}' (a run-time-shaped output on the host"
                                f"{with_others})")
    return np.empty(count, dtype)

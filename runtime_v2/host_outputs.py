"""Run-time-shaped outputs placed on the host (graph outputs) count against the session's device memory cap.

They are plain arrays, not spans of the caching allocator, so nothing else bounded them: a 2 GiB output of a
session capped at 1 GiB was allocated (issue 46). `host_output` refuses one that, with what the device holds,
would pass Options.device_memory_bytes: a DeviceMemoryError naming the tensor, before any allocation.
"""
from __future__ import annotations

import numpy as np

from ge.errors import DeviceMemoryError


def host_output(count: int, dtype, nbytes: int, alloc, plan, tensor: int) -> np.ndarray:
    device = alloc.device
    if nbytes + device.in_use > device.capacity:   # as the allocator's own requests: idle spans back first
        for recycle in (getattr(alloc, "empty_cache", None), getattr(alloc, "on_oom", None)):
            if recycle is not None and nbytes + device.in_use > device.capacity:
                recycle()
    if nbytes + device.in_use > device.capacity:
        raise DeviceMemoryError(nbytes, device.capacity, device.in_use,
                                f"output '{plan.tensors[tensor].name}' (a run-time-shaped output on the host)")
    return np.empty(count, dtype)

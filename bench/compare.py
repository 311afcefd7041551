"""Side-by-side timing: alternate the contenders in one process so machine noise hits all of them alike."""
from __future__ import annotations

import time

import numpy as np


def alternate(contenders: dict, rounds: int = 15, warmup: int = 2) -> dict[str, np.ndarray]:
    """{name: fn} -> {name: seconds per call}, calls interleaved round by round."""
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: np.array(t) for name, t in times.items()}


def record(benchmark, times: dict[str, np.ndarray], base: str) -> dict:
    """Medians (ms) and ratios to `base` into benchmark.extra_info; returns them."""
    info = {f"{name}_median_ms": round(float(np.median(t)) * 1e3, 3) for name, t in times.items()}
    for name, t in times.items():
        if name != base:
            info[f"{name}_over_{base}"] = round(float(np.median(t) / np.median(times[base])), 3)
    benchmark.extra_info.update(info)
    return info

"""bench helpers: alternating timing lives in ge.bench; this records it in pytest-benchmark's extra_info."""
from __future__ import annotations

from ge.bench import alternate as _alternate
from ge.bench import summarize

ONCE = False   # bench/conftest.py: the benchmarks are disabled, each bench runs once as a test


def alternate(contenders: dict, rounds: int = 15, **kwargs) -> dict:
    """ge.bench.alternate; one round and no warm-up when the benchmarks run once as tests (ONCE)."""
    if ONCE:
        rounds, kwargs = 1, dict(kwargs, warmup=0)
    return _alternate(contenders, rounds, **kwargs)


def record(benchmark, times, base: str) -> dict:
    """Medians (ms) and ratios to `base` into benchmark.extra_info; returns them."""
    info = {}
    for row in summarize(times, base):
        info[f"{row.name}_median_ms"] = row.median_ms
        if row.name != base:
            info[f"{row.name}_over_{base}"] = row.ratio
    benchmark.extra_info.update(info)
    return info

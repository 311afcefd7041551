"""bench helpers: alternating timing lives in ge.bench; this records it in pytest-benchmark's extra_info."""
from __future__ import annotations

from ge.bench import alternate, summarize  # noqa: F401  (re-exported for the bench modules)


def record(benchmark, times, base: str) -> dict:
    """Medians (ms) and ratios to `base` into benchmark.extra_info; returns them."""
    info = {}
    for row in summarize(times, base):
        info[f"{row.name}_median_ms"] = row.median_ms
        if row.name != base:
            info[f"{row.name}_over_{base}"] = row.ratio
    benchmark.extra_info.update(info)
    return info

"""The hybrid assigner: run every candidate on the same requests and keep the smallest total (GE's
HybridMemAssigner, plus the offset planners of best_fit.py and two_sided.py). Ties go to the earlier
candidate in ASSIGNERS.

`assign(buffers, name="hybrid")` returns (winner, totals per candidate); a single name runs only that one;
"blocks" runs the block strategies only (GE's HybridMemAssigner: whole blocks, no partial overlaps, which
runtime_v1's gear memory split needs to cut between them).
"""
from __future__ import annotations

import time

from .best_fit import best_fit_by_breadth, best_fit_by_conflict, best_fit_by_size
from .block_assigner import BLOCK_STRATEGIES, Assignment, assign_blocks, no_reuse
from .two_sided import two_sided_fit

ASSIGNERS = {s.name: (lambda bs, s=s: assign_blocks(bs, s)) for s in BLOCK_STRATEGIES}
ASSIGNERS["best-fit-size"] = best_fit_by_size
ASSIGNERS["best-fit-breadth"] = best_fit_by_breadth
ASSIGNERS["best-fit-conflict"] = best_fit_by_conflict
ASSIGNERS["two-sided-fit"] = two_sided_fit
ASSIGNERS["no-reuse"] = no_reuse


def assign(buffers, name: str = "hybrid") -> tuple[Assignment, dict[str, int], dict[str, float]]:
    """(winning assignment, total bytes per candidate, seconds per candidate)."""
    if name not in ("hybrid", "blocks") and name not in ASSIGNERS:
        raise ValueError(f"unknown memory assigner '{name}'; choose hybrid, blocks or one of {', '.join(ASSIGNERS)}")
    names = ([n for n in ASSIGNERS if n != "no-reuse"] if name == "hybrid" else
             [s.name for s in BLOCK_STRATEGIES] if name == "blocks" else [name])
    best, totals, seconds = None, {}, {}
    for n in names:
        t0 = time.perf_counter()
        a = ASSIGNERS[n](buffers)
        seconds[n] = time.perf_counter() - t0
        totals[n] = a.total
        if best is None or a.total < best.total:
            best = a
    return best, totals, seconds

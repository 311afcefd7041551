"""The pass manager: runs the named pipeline, can skip, time, dump after and verify after each pass.

A pass is `fn(graph) -> bool` (changed), or `fn(graph, options) -> bool` when it needs the compile options. Switches, also as environment flags for bisecting:
  disabled passes   Options.disabled_passes   or  GE_DISABLE_PASSES=fuse_activation,fold_batchnorm
  dump after a pass Options.dump_after        or  GE_DUMP_AFTER=fold_constants   (printed graph to stderr)
  verify after each Options.verify_passes     or  GE_VERIFY_PASSES=1
A failure is re-raised as a GEError naming the pass.
"""
from __future__ import annotations

import inspect
import logging
import os
import sys
import time
from typing import Callable

from ..errors import GEError
from ..ir import verify

log = logging.getLogger("ge.passes")

Pass = Callable[..., bool]


def _takes_options(fn) -> bool:
    return len(inspect.signature(fn).parameters) > 1


def _env_list(name: str) -> set[str]:
    return {s.strip() for s in os.environ.get(name, "").split(",") if s.strip()}


class PassManager:
    def __init__(self, passes: list[tuple[str, Pass]], disabled=(), dump_after=(), verify_each=False,
                 options=None):
        self.passes, self.options = passes, options
        self.disabled = set(disabled) | _env_list("GE_DISABLE_PASSES")
        self.dump_after = set(dump_after) | _env_list("GE_DUMP_AFTER")
        self.verify_each = verify_each or os.environ.get("GE_VERIFY_PASSES") == "1"
        self.timings: dict[str, float] = {}

    def run(self, graph, passes: list[tuple[str, Pass]] | None = None) -> None:
        """Run `passes` (default: this manager's pipeline) once, in order."""
        for name, fn in self.passes if passes is None else passes:
            if name in self.disabled:
                log.debug("pass %s: disabled", name)
                continue
            t0 = time.perf_counter()
            try:
                changed = fn(graph, self.options) if _takes_options(fn) else fn(graph)
                if self.verify_each:
                    verify(graph)
            except GEError:
                raise
            except Exception as e:  # noqa: BLE001 - name the pass that broke
                raise GEError(f"pass '{name}' failed on graph '{graph.name}': {type(e).__name__}: {e}") from e
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t0
            log.debug("pass %s: changed=%s in %.1f ms", name, changed, self.timings[name] * 1e3)
            if name in self.dump_after:
                print(f"--- after {name} ---\n{graph}", file=sys.stderr)

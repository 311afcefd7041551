"""CompilerConfig: the backend's options under TorchAir's names (torchair/configs/compiler_config.py).

  mode               "max-autotune": the graph compiled and sunk (GE's static graph: ge's runtime_v1, outputs
                     computed straight into tensors torch owns); "reduce-overhead": launches captured and
                     replayed (TorchAir's aclgraph: ge's runtime_v2 replay, docs/replays.md)
  aicore_num         AI cores a launch may tile over (0: ge's default, the CPUs this process may use)
  frozen_parameters  the module's parameters and buffers become constants of the plan, read in place from
                     the module's tensors; a tensor changed after compiling (its version or storage moved)
                     compiles the graph again before the next run, so a stale weight is never used
  dynamic_gears_merge_policy
                     how the gears of several dims combine (set_dim_gears): "zip" (TorchAir's default: the
                     k-th gears of every dim together) or "product" (every combination)
  cache_dir          a folder for the compile cache across processes (cache.py): a graph compiled once is
                     loaded by the next process with the same graph, inputs, weights, config and ge
  options            further ge.Options (a dict or Options) for the compile: topo_sorting_mode, streams...
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..errors import GEError
from ..options import Options, as_options

MODES = {"max-autotune": "v1", "reduce-overhead": "v2"}


@dataclass(frozen=True)
class CompilerConfig:
    mode: str = "max-autotune"
    aicore_num: int = 0
    frozen_parameters: bool = True
    dynamic_gears_merge_policy: str = "zip"
    cache_dir: str | None = None
    options: Options | dict | None = field(default=None, compare=False)

    def __post_init__(self):
        if self.mode not in MODES:
            raise GEError(f"CompilerConfig mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not isinstance(self.aicore_num, int) or self.aicore_num < 0:
            raise GEError(f"CompilerConfig aicore_num must be an integer >= 0, got {self.aicore_num!r}")
        if self.dynamic_gears_merge_policy not in ("zip", "product"):
            raise GEError("CompilerConfig dynamic_gears_merge_policy must be 'zip' or 'product', got "
                          f"{self.dynamic_gears_merge_policy!r}")
        if self.cache_dir is not None:
            object.__setattr__(self, "cache_dir", os.fspath(self.cache_dir))

    @property
    def runtime(self) -> str:
        return MODES[self.mode]

    def session_options(self) -> Options:
        opts = as_options(self.options)
        return opts.replace(aicore_num=self.aicore_num) if self.aicore_num else opts

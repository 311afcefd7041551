"""Memory planning and kernel compile time.

    pytest bench/test_planning.py --benchmark-only -n 0
- memory: planned feature-map bytes, the live lower bound and no-reuse bytes per light model, for DFS and
  memory_priority orders (extra_info); the benchmark times the whole compile (import, passes, plan).
- compile: Numba kernels of a model compiled in a fresh cache directory (cold) vs loaded from it (warm), each
  in a new process, as a user's first and second start.
"""
import os
import subprocess
import sys
import time

import pytest

import ge
from ge.zoo import LIGHT_MODELS, light_model_path


@pytest.mark.parametrize("order", ["dfs", "memory_priority"])
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_memory_plan(benchmark, name, order):
    options = ge.Options(topo_sorting_mode=order)
    benchmark.group = f"compile + memory plan ({order})"
    plan = benchmark.pedantic(ge.compile, (light_model_path(name), options), rounds=2, iterations=1)
    s = plan.memory.stats
    benchmark.extra_info.update({
        "feature_map_MiB": round(s.feature_map_bytes / 2**20, 2), "lower_bound_MiB": round(
            s.lower_bound_bytes / 2**20, 2), "no_reuse_MiB": round(s.no_reuse_bytes / 2**20, 2),
        "planned_over_bound": round(s.ratio, 4), "saved_vs_no_reuse": round(s.reduction, 4),
        "assigner": s.assigner, "plan_ms": round(s.seconds * 1e3, 2)})


_WARMUP = ("import ge, time; from ge.warmup import compile_kernels; "
           "p = ge.compile({path!r}); t = time.perf_counter(); compile_kernels(p); "
           "print(time.perf_counter() - t)")


def _kernel_seconds(path: str, cache_dir: str | None) -> float:
    env = dict(os.environ) if cache_dir is None else dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", _WARMUP.format(path=path)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["resnet50", "inception_v2"])
def test_kernel_compile_cold_vs_warm(benchmark, name, tmp_path):
    path = light_model_path(name)
    benchmark.group = "kernel compile: cold cache vs warm cache"
    if benchmark.disabled:   # once as a test: one warm start on the suite's cache, no model compiled again cold
        assert benchmark.pedantic(_kernel_seconds, (path, None), rounds=1, iterations=1) >= 0
        return
    t0 = time.perf_counter()
    cold = _kernel_seconds(path, str(tmp_path))
    warm = benchmark.pedantic(_kernel_seconds, (path, str(tmp_path)), rounds=1, iterations=1)
    benchmark.extra_info.update({"cold_s": round(cold, 2), "warm_s": round(warm, 3),
                                 "cold_over_warm": round(cold / max(warm, 1e-6), 1),
                                 "wall_s": round(time.perf_counter() - t0, 2)})

"""The compile cache across processes (ge.torch.CompilerConfig(cache_dir=...)): first call in a fresh process,
cold (empty cache dir) against cached (the entry a previous process wrote), and Inductor's first call with its
own caches warm (FX graph and AOTAutograd caches: its compile with a warm cache), side by side:

    python bench/torch_cache.py [--models resnet50,bert_small] [--pairs 2]

Each measurement is a new python process (bench/torch_compile.py's models: ResNet-50 at 224x224, BERT 4 x 256
at sequence 32, ...; random weights, seed 0), printing the first call's wall and
CPU seconds (Dynamo, AOTAutograd, then ge: conversion and compile, or the cache's load), ge's part of it
(GeGraph._compile: conversion and compile or the cache's load, then the runtime's load) and the process's
total. A warm-up process runs first so Numba's kernel cache is warm for every measured one: the difference
is ge's conversion and compile. Pairs (cold in a new cache dir, then cached from it) alternate; medians.
Prints the date, CPU, commit and load average before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# bench/ last: bench/transformers.py must not shadow the transformers package
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE] + [HERE]


def child(name: str, cache: str) -> None:
    """One first call; cache "inductor": torch.compile's default backend instead of ge."""
    t_start = time.perf_counter()
    import torch
    import ge.torch
    from torch_compile import model_and_input, tensor_of
    from ge.torch.runtime import GeGraph
    model, inputs = model_and_input(name)
    config = ge.torch.CompilerConfig(mode="max-autotune", cache_dir=cache)
    backend = "inductor" if cache == "inductor" else ge.torch.get_backend(config)
    run = torch.compile(model, backend=backend, fullgraph=True)
    hits, ge_wall, ge_cpu = [], [], []
    orig = GeGraph._compile

    def _compile(self, args):   # ge's part: conversion and compile (or the cache's load), the runtime's load
        w, c = time.perf_counter(), time.process_time()
        orig(self, args)
        ge_wall.append(time.perf_counter() - w)
        ge_cpu.append(time.process_time() - c)
        hits.append(self.cache_hit)
    GeGraph._compile = _compile
    with torch.no_grad():
        w0, c0 = time.perf_counter(), time.process_time()
        out = tensor_of(run(*inputs))
        w1, c1 = time.perf_counter(), time.process_time()
        err = float((out - tensor_of(model(*inputs))).abs().max() / tensor_of(model(*inputs)).abs().max())
    print(json.dumps({"first_wall": w1 - w0, "first_cpu": c1 - c0, "process": time.perf_counter() - t_start,
                      "ge_wall": sum(ge_wall), "ge_cpu": sum(ge_cpu),
                      "hit": all(hits) and bool(hits), "err": err}))


def measure(name: str, cache: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", name, cache], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--child", nargs=2, metavar=("MODEL", "CACHE"))
    args = ap.parse_args()
    if args.child:
        return child(*args.child)
    from aicores_report import machine
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    print(f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {machine()}, commit {commit}, load {os.getloadavg()[0]:.1f}")
    print("| model | first call cold s (CPU s) | cached s (CPU s) | Inductor, its caches warm s (CPU s) | "
          "ge's part cold s (CPU s) | cached s (CPU s) | ge's part cached / cold (CPU) | process cold s | cached s "
          "| Inductor s | error / scale |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory() as warm:
            measure(name, warm)   # Numba's kernel cache warm for what follows
        measure(name, "inductor")   # and Inductor's
        cold, cached, ind = [], [], []
        for _ in range(args.pairs):
            with tempfile.TemporaryDirectory() as d:
                cold.append(measure(name, d))
                cached.append(measure(name, d))
                ind.append(measure(name, "inductor"))
        assert not any(r["hit"] for r in cold) and all(r["hit"] for r in cached), (cold, cached)
        med = lambda rs, k: sorted(r[k] for r in rs)[len(rs) // 2]  # noqa: E731
        print(f"| {name} | {med(cold, 'first_wall'):.2f} ({med(cold, 'first_cpu'):.2f}) | "
              f"{med(cached, 'first_wall'):.2f} ({med(cached, 'first_cpu'):.2f}) | "
              f"{med(ind, 'first_wall'):.2f} ({med(ind, 'first_cpu'):.2f}) | "
              f"{med(cold, 'ge_wall'):.2f} ({med(cold, 'ge_cpu'):.2f}) | "
              f"{med(cached, 'ge_wall'):.2f} ({med(cached, 'ge_cpu'):.2f}) | "
              f"{med(cached, 'ge_cpu') / med(cold, 'ge_cpu'):.2f}x | {med(cold, 'process'):.2f} | "
              f"{med(cached, 'process'):.2f} | {med(ind, 'process'):.2f} | "
              f"{max(r['err'] for r in cold + cached + ind):.1e} |", flush=True)
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

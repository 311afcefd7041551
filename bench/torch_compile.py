"""torch.compile(backend="ge") against PyTorch eager and Inductor (torch.compile's default), one thread each:

    python bench/torch_compile.py [--models resnet18,bert] [--rounds 15] [--runs 5]

Needs torch (and transformers for BERT): the dev venv's python. Models (random weights, eval, no_grad, batch 1):
ResNet-18 (tests/torch_compile/torch_nets.py, torchvision's layer plan) at 224x224, and transformers'
BertModel 4 layers x 256 (4 heads, eager attention) at sequence 32. Contenders: eager, Inductor, ge
max-autotune (runtime_v1), ge reduce-overhead (runtime_v2 replay). torch.set_num_threads(1); ge
aicore_num=1, thread_budget=1. Every contender's output is checked against eager (1e-4 of its scale) before
anything is timed; compile = the first call's seconds (ge's includes Numba compiles not yet cached).
Calls alternate in a shuffled order round by round; a call is `--runs` runs; medians, ms per run, ratios to
eager and to Inductor. Prints the date, CPU, commit and load average before and after.
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import time

import numpy as np
import torch

import ge.torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "torch_compile"))
# bench/ last: bench/transformers.py must not shadow the transformers package
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE] + [HERE]
import torch_nets  # noqa: E402
from aicores_report import machine  # noqa: E402


def model_and_input(name: str):
    torch.manual_seed(0)
    if name == "resnet18":
        return torch_nets.ResNet18().eval(), (torch.randn(1, 3, 224, 224),)
    if name == "bert":
        return torch_nets.bert(layers=4, hidden=256, heads=4, vocab=30522), (torch.randint(0, 30522, (1, 32)),)
    raise SystemExit(f"unknown model {name}")


def tensor_of(out) -> torch.Tensor:
    return out if isinstance(out, torch.Tensor) else out[0]


def contenders(model) -> dict:
    one_core = {"thread_budget": 1}
    ge_v1 = ge.torch.CompilerConfig(mode="max-autotune", aicore_num=1, options=one_core)
    ge_v2 = ge.torch.CompilerConfig(mode="reduce-overhead", aicore_num=1, options=one_core)
    return {"eager": model, "inductor": torch.compile(model),
            "ge max-autotune": torch.compile(model, backend=ge.torch.get_backend(ge_v1), fullgraph=True),
            "ge reduce-overhead": torch.compile(model, backend=ge.torch.get_backend(ge_v2), fullgraph=True)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet18,bert")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(1)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC   {machine()}   commit {commit}   "
          f"torch {torch.__version__}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}   one thread each, batch 1, "
          f"{a.rounds} rounds of {a.runs} runs, medians")
    for name in a.models.split(","):
        model, args = model_and_input(name)
        fns = contenders(model)
        compile_s = {}
        with torch.no_grad():
            ref = tensor_of(model(*args))
            for k, fn in fns.items():   # the first call compiles; then the outputs must match eager
                t0 = time.perf_counter()
                y = tensor_of(fn(*args))
                compile_s[k] = time.perf_counter() - t0
                err = float((y - ref).abs().max() / ref.abs().max())
                assert err <= 1e-4, f"{name} {k}: error {err:.3g} of the output's scale"
                fn(*args)
            times = {k: [] for k in fns}
            names, rng = list(fns), np.random.default_rng(0)
            for _ in range(a.rounds):
                for i in rng.permutation(len(names)):
                    t0 = time.perf_counter()
                    for _ in range(a.runs):
                        fns[names[i]](*args)
                    times[names[i]].append((time.perf_counter() - t0) / a.runs)
        med = {k: float(np.median(v)) for k, v in times.items()}
        print(f"\n{name}: {'contender':20s} {'ms':>9s} {'vs eager':>9s} {'vs inductor':>12s} {'first call s':>13s}")
        for k in fns:
            print(f"{'':{len(name) + 1}s} {k:20s} {med[k] * 1e3:9.3f} {med[k] / med['eager']:8.2f}x "
                  f"{med[k] / med['inductor']:11.2f}x {compile_s[k]:13.1f}", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

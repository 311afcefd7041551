"""set_dim_gears over the sequence length against one compile per shape and eager, one thread each:

    python bench/torch_gears.py [--gears 32,64,128] [--rounds 7] [--runs 5]

transformers' BertModel 4 layers x 256 (4 heads, eager attention, random weights, seed 0), batch 1, input ids
only. Contenders: eager; ge with `set_dim_gears(ids, {1: gears})` and dynamic=True (one GearPlans); ge
without gears (Dynamo compiles again for new sizes, ge one static plan per shape). Counted: Dynamo's frame
compiles (backend calls) and ge's plans; timed: the first pass over every gear (compiles), then per gear
calls alternating with eager, medians of `--rounds` rounds of `--runs` runs. Every output is checked
against eager (1e-4 of its scale). torch.set_num_threads(1); ge aicore_num=1, thread_budget=1.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
# bench/ last: bench/transformers.py must not shadow the transformers package
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE] + [HERE]
sys.path.insert(0, os.path.join(HERE, "..", "tests", "torch_compile"))
import ge.torch  # noqa: E402
import torch_nets  # noqa: E402
from aicores_report import machine  # noqa: E402


def counted(config):
    calls = []
    inner = ge.torch.get_backend(config)

    def backend(gm, example_inputs):
        calls.append(1)
        return inner(gm, example_inputs)
    return backend, calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gears", default="32,64,128")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    gears = [int(g) for g in args.gears.split(",")]
    torch.set_num_threads(1)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    print(f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {machine()}, commit {commit}, load {os.getloadavg()[0]:.1f}")
    model = torch_nets.bert(layers=4, hidden=256, heads=4, vocab=30522)
    ids = {g: torch.randint(0, 30522, (1, g), generator=torch.Generator().manual_seed(g)) for g in gears}
    config = ge.torch.CompilerConfig(aicore_num=1, options={"thread_budget": 1})
    runs = {}
    for name in ("gears", "per shape"):
        torch._dynamo.reset()
        backend, calls = counted(config)
        first = ids[gears[0]].clone()
        if name == "gears":
            ge.torch.set_dim_gears(first, {1: gears})
        fn = torch.compile(model, backend=backend, dynamic=True if name == "gears" else None)
        t0 = time.perf_counter()
        with torch.no_grad():
            for g in gears:
                out = fn(first if g == gears[0] else ids[g]).last_hidden_state
                ref = model(ids[g]).last_hidden_state
                err = float((out - ref).abs().max() / ref.abs().max())
                assert err <= 1e-4, (name, g, err)
        runs[name] = (fn, time.perf_counter() - t0, len(calls))
    print("| contender | Dynamo compiles | first pass over the gears s | " +
          " | ".join(f"seq {g} ms (x eager)" for g in gears) + " |")
    print("|---|---|---|" + "---|" * len(gears))
    times = {name: {g: [] for g in gears} for name in ("eager", *runs)}
    calls = {"eager": model, **{k: v[0] for k, v in runs.items()}}
    with torch.no_grad():
        for _ in range(args.rounds):
            for g in gears:
                for name, fn in calls.items():
                    t0 = time.perf_counter()
                    for _ in range(args.runs):
                        fn(ids[g])
                    times[name][g].append((time.perf_counter() - t0) / args.runs * 1e3)
    med = {n: {g: sorted(v)[len(v) // 2] for g, v in d.items()} for n, d in times.items()}
    print("| eager | - | - | " + " | ".join(f"{med['eager'][g]:.2f}" for g in gears) + " |")
    for name, (_, first_s, n) in runs.items():
        print(f"| ge {name} | {n} | {first_s:.1f} | " + " | ".join(
            f"{med[name][g]:.2f} ({med[name][g] / med['eager'][g]:.2f}x)" for g in gears) + " |")
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

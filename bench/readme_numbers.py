"""The README's performance tables, from one script, with the machine they were measured on.

    python bench/readme_numbers.py                      # every light model; Markdown on stdout
    python bench/readme_numbers.py --models inception_v1,resnet50 --rounds 10
    python bench/readme_numbers.py --aicores            # also bench/aicores_report.py's tables

Prints the date, the CPU model, the cores this process may use and the load average first: latencies are
only true of that machine at that moment (these machines are shared), so read ratios across a row, which
alternating rounds keep fair (ge.bench.alternate), more than absolute times.
Tables: latency per light model (runtime_v1, runtime_v2, onnxruntime when installed; one stream vs the
plan's streams on v1), the memory plan (`ge plan`'s numbers), and compile vs offline load (.gem).
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ge
from ge.bench import alternate, onnxruntime_session
from ge.extras import have
from ge.zoo import LIGHT_MODELS, light_model_path, reference_feeds, with_random_weights

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import machine  # noqa: E402


def _ms(x) -> str:
    return f"{np.median(x) * 1e3:.2f}"


def latency(models, rounds: int) -> str:
    ort = have("bench")
    head = "| model | v1 ms | v2 ms | v1 one stream ms | streams | " + ("onnxruntime ms | v1 / ort |" if ort else "")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name in models:
        model = with_random_weights(name)   # the shipped weights are one constant: random ones are fairer
        v1, v2 = ge.Session(model, runtime="v1"), ge.Session(model, runtime="v2")
        one = ge.Session(model, runtime="v1", options={"max_streams": 1, "enable_single_stream": True})
        feeds = reference_feeds(v1)
        runs = {"v1": lambda: v1.run(None, feeds), "v2": lambda: v2.run(None, feeds),
                "one": lambda: one.run(None, feeds)}
        if ort:
            o = onnxruntime_session(model)
            runs["ort"] = lambda: o.run(None, feeds)
        t = alternate(runs, rounds=rounds)
        row = f"| {name} | {_ms(t['v1'])} | {_ms(t['v2'])} | {_ms(t['one'])} | {v1.plan.num_streams} |"
        if ort:
            row += f" {_ms(t['ort'])} | {np.median(t['v1']) / np.median(t['ort']):.2f} |"
        lines.append(row)
        print(f"  {name} done", file=sys.stderr)
    return "\n".join(lines)


def memory(models) -> str:
    lines = ["| model | no reuse MiB | bound MiB | planned MiB | ratio | winner | streams |", "|---|---|---|---|---|---|---|"]
    for name in models:
        p = ge.compile(light_model_path(name))
        s = p.memory.stats
        lines.append(f"| {name} | {s.no_reuse_bytes / 2**20:.2f} | {s.lower_bound_bytes / 2**20:.2f} | "
                     f"{s.feature_map_bytes / 2**20:.2f} | {s.ratio:.3f} | {s.assigner} | {p.num_streams} |")
    return "\n".join(lines)


def offline(models, rounds: int) -> str:
    lines = ["| model | nodes | weights MiB | compile s | load .gem s |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as d:
        for name in models:
            path = light_model_path(name)
            gem = os.path.join(d, f"{name}.gem")
            ge.save(ge.compile(path), gem)
            t = alternate({"compile": lambda: ge.compile(path), "load": lambda: ge.load(gem)},
                          rounds=max(3, rounds // 4), warmup=1)
            p = ge.load(gem)
            w = sum(a.nbytes for a in p.constants.values()) / 2**20
            lines.append(f"| {name} | {len(p.nodes)} | {w:.1f} | {np.median(t['compile']):.3f} | "
                         f"{np.median(t['load']):.3f} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(LIGHT_MODELS), help="comma-separated light model names")
    ap.add_argument("--rounds", type=int, default=15, help="alternating rounds per latency (default 15)")
    ap.add_argument("--aicores", action="store_true", help="also run bench/aicores_report.py")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    t0 = time.perf_counter()
    print(f"Measured {machine()}; Python {platform.python_version()}, ge {ge.__version__}.\n")
    print(f"Latency, batch 1, median of {args.rounds} alternating rounds (random weights, one process):\n")
    print(latency(models, args.rounds))
    print("\nMemory plan (dfs, default options; deterministic):\n")
    print(memory(models))
    print("\nCompile vs offline load (warm kernel caches):\n")
    print(offline(models, args.rounds))
    report = Path(__file__).with_name("aicores_report.py")
    if args.aicores and report.exists():
        print("\nAI cores (bench/aicores_report.py):\n", flush=True)
        subprocess.run([sys.executable, str(report)], check=False)
    print(f"\n(measured in {time.perf_counter() - t0:.0f} s; regenerate: python bench/readme_numbers.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The memory planner before / after a change, side by side in one process: plan_memory alone and the whole
compile, alternating runs, on a Sum and a Concat of 1,000 and 10,000 inputs (split_variadic's nodes),
ResNet-50 and bert_6x768 (batch 1, sequence 128). Both planners must give the same plans (checked).

The "before" planner is ge/memory as it was at a git revision, loaded beside the current one as the package
`ge._memory_before` (its relative imports reach the current ge.plan, ge.npu...); for the whole compile the
compiler is pointed at it (with PlanTensor.nbytes as it was, np.prod).

    python bench/memory_planner.py [--before REV] [--rounds N] [cases...]
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ge
import ge.compiler
from ge import exports
from ge.memory import continuous, plan_memory
from ge.plan import PlanTensor
from ge.zoo import light_model_path

sys.path.insert(0, str(Path(__file__).parent))
from variadic_compile import model as variadic  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def before_package(rev: str):
    """ge/memory at `rev` as ge._memory_before."""
    files = subprocess.run(["git", "ls-tree", "--name-only", rev, "ge/memory/"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    tmp = Path(tempfile.mkdtemp(prefix="ge_memory_before_"))
    (tmp / "_memory_before").mkdir()
    for f in files:
        text = subprocess.run(["git", "show", f"{rev}:{f}"], cwd=ROOT, check=True, capture_output=True,
                              text=True).stdout
        (tmp / "_memory_before" / Path(f).name).write_text(text)
    ge.__path__.append(str(tmp))
    return (importlib.import_module("ge._memory_before.planner"),
            importlib.import_module("ge._memory_before.continuous"))


def cases(names):
    shapes = {"input_ids": (1, 128), "attention_mask": (1, 128), "token_type_ids": (1, 128)}
    table = {f"{op.lower()}{n}": (lambda op=op, n=n: (variadic(op, n), ge.Options()))
             for op in ("Sum", "Concat") for n in (1000, 10000)}
    table["resnet50"] = lambda: (light_model_path("resnet50"), ge.Options())
    table["bert_6x768"] = lambda: (exports.load("bert_6x768"), ge.Options(input_shape=shapes))
    return {n: table[n] for n in names or table}


def same(a, b) -> bool:
    strip = lambda m: dataclasses.replace(m, stats=dataclasses.replace(m.stats, seconds=0))  # noqa: E731
    return strip(a) == strip(b)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--before", default="578704f")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
          f"commit {commit} vs {args.before}; median of {args.rounds} alternating rounds")
    old_planner, old_continuous = before_package(args.before)
    new_nbytes = PlanTensor.nbytes
    old_nbytes = property(lambda t: int(np.prod(t.shape, dtype=np.int64)) * t.dtype.itemsize
                          if t.is_static else None)

    def use(old: bool) -> None:
        ge.compiler.plan_memory = old_planner.plan_memory if old else plan_memory
        ge.compiler.continuous = old_continuous if old else continuous
        PlanTensor.nbytes = old_nbytes if old else new_nbytes

    print(f"{'case':12} {'plan_memory before':>19} {'after':>9} {'ratio':>6}   "
          f"{'compile before':>15} {'after':>9} {'ratio':>6}  same plans")
    for name, make in cases(args.cases).items():
        model, options = make()
        use(False)
        plan = ge.compile(model, options)
        bare = dataclasses.replace(plan, memory=None)
        times = {k: [] for k in ("pb", "pa", "cb", "ca")}
        ok = True
        for _ in range(args.rounds):
            for old in (True, False):
                use(old)
                t = time.perf_counter()
                mem = (old_planner.plan_memory if old else plan_memory)(bare)
                times["pb" if old else "pa"].append(time.perf_counter() - t)
                ok &= same(mem, plan.memory)
                t = time.perf_counter()
                whole = ge.compile(model, options)
                times["cb" if old else "ca"].append(time.perf_counter() - t)
                ok &= same(whole.memory, plan.memory)
        use(False)
        m = {k: statistics.median(v) for k, v in times.items()}
        print(f"{name:12} {m['pb']:17.3f} s {m['pa']:7.3f} s {m['pb'] / m['pa']:5.2f}x   "
              f"{m['cb']:13.3f} s {m['ca']:7.3f} s {m['cb'] / m['ca']:5.2f}x  {'yes' if ok else 'NO'}",
              flush=True)
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

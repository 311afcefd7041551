"""Load time of a `.gem` with the bounded reader (ge/offline/bounded.py: plan.json first, npy headers checked
before any weight is read) vs the reader before it (files.py at commit 4f49346: one mmap, np.load fallback),
side by side in one process, alternating. Target (issue 46): a ResNet-50 `.gem` within 10%.

    python bench/gem_load.py [model] [repeats]
"""
from __future__ import annotations

import datetime
import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
import time

import ge
from ge.offline import build, parse, verify_plan
from ge.zoo import light_model_path

OLD = "4f49346"


def _old_files():
    """ge/offline/files.py as it was at OLD, imported inside the ge.offline package (its relative imports)."""
    src = subprocess.run(["git", "show", f"{OLD}:ge/offline/files.py"], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))).stdout
    path = os.path.join(tempfile.mkdtemp(), "_old_files.py")
    open(path, "w").write(src)
    spec = importlib.util.spec_from_file_location("ge.offline._old_files", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(name: str = "resnet50", repeats: int = 5) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, commit {commit}")
    old = _old_files()
    path = os.path.join(tempfile.mkdtemp(), f"{name}.gem")
    ge.save(ge.compile(light_model_path(name)), path)
    print(f"{name}.gem: {os.path.getsize(path) / 2**20:.1f} MiB")

    def load_old():
        text, arrays = old.read_members(path)
        plan = build(parse(text, path), arrays)
        verify_plan(plan)

    def load_new():
        ge.load(path)

    times = {"before": [], "bounded": []}
    for _ in range(repeats):
        for key, fn in (("before", load_old), ("bounded", load_new)):
            t = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t)
    b, n = min(times["before"]), min(times["bounded"])
    print(f"ge.load, best of {repeats}: before {b * 1e3:.1f} ms, bounded {n * 1e3:.1f} ms, ratio {n / b:.3f}")


if __name__ == "__main__":
    main(*(sys.argv[1:2] or ["resnet50"]), *(int(a) for a in sys.argv[2:3]))

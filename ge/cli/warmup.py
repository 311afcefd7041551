"""`ge warmup`: fill the kernel caches for models ahead of their first run, in parallel worker processes.

Each model is one `ge run MODEL --repeat 0` in a worker process (its kernels compiled or loaded, its first run
done once); up to --jobs workers at once. Workers that need the same kernel do not both compile it: the first
takes its lock and the others wait and load it (ge/npu/jitcache.py), so parallel workers split the work of a
cold cache instead of repeating it. Never silent: each worker's progress lines come through, prefixed by its
model, and each model's outcome (kernels compiled / from cache, seconds) is printed when it ends. One model:
its process shares its kernels out to compile workers (ge/npu/compile_workers.py); several: each compiles alone.
"""
from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time

from ..errors import GEError
from ..zoo import DEFAULT_MODEL, LIGHT_MODELS
from . import common


def cmd_warmup(args) -> int:
    models = args.models or [DEFAULT_MODEL]
    if models == ["all"]:
        models = list(LIGHT_MODELS)
    paths = {m: common.model_path(m) for m in models}   # a bad name fails here, before any work
    if args.jobs < 1:
        raise GEError("--jobs counts worker processes: 1 or more")
    env = dict(os.environ, GE_PROGRESS_EVERY=os.environ.get("GE_PROGRESS_EVERY", "2"))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    if min(args.jobs, len(models)) > 1:   # the models' processes use the cores: no compile workers of their own
        env.setdefault("GE_COMPILE_WORKERS", "0")
    pending, running, failed = list(models), {}, []
    sel = selectors.DefaultSelector()
    t0 = time.perf_counter()
    print(f"warmup    {len(models)} model(s), {min(args.jobs, len(models))} worker(s) at once", flush=True)
    while pending or running:
        while pending and len(running) < args.jobs:
            m = pending.pop(0)
            cmd = [sys.executable, "-m", "ge.cli", "run", paths[m], "--repeat", "0", "--runtime", args.runtime]
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            running[p] = (m, time.perf_counter(), [])
            sel.register(p.stderr, selectors.EVENT_READ, p)
        for key, _ in sel.select(timeout=1.0):
            p = key.data
            line = p.stderr.readline()
            if line:
                print(f"{common.label(paths[running[p][0]]):14s} {line.rstrip()}", file=sys.stderr, flush=True)
                running[p][2].append(line)
                continue
            sel.unregister(p.stderr)
            out = p.stdout.read()
            p.wait()
            m, start, err = running.pop(p)
            took = time.perf_counter() - start
            times = next((ln for ln in out.splitlines() if ln.startswith("time")), "")
            kernels = next((part.strip() for part in times.split("   ") if part.strip().startswith("kernels")), "")
            if p.returncode:
                failed.append(m)
                print(f"failed    {m} in {took:.1f} s: {''.join(err).strip().splitlines()[-1:] or ['?']}",
                      flush=True)
            else:
                print(f"ready     {m:14s} in {took:6.1f} s   {kernels}", flush=True)
    print(f"warmup    done in {time.perf_counter() - t0:.1f} s{f'; failed: {chr(44).join(failed)}' if failed else ''}")
    return 1 if failed else 0

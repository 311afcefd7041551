"""Peak RSS of a process running ResNet-50 at the defaults, ge beside onnxruntime (issue 44's footprint target).

    python bench/footprint.py [--model resnet50] [--cases import,compile,session,twice,ort] [--rounds 1]

Step 1 (children): each case runs in a fresh child process that does one thing, reading VmRSS and VmHWM (the
        peak) from /proc/self/status after each phase:
          import   `import ge`
          compile  `import ge`, `ge.compile(model)`
          session  `import ge`, `ge.Session(model)` (the defaults: runtime auto), one run: what `ge run` does
          twice    the session case, then a second `ge.Session(model)` of the same model and one run: what the
                   second compile costs (its kernels should come from the first's, not a second copy)
          ort      `import onnxruntime`, `InferenceSession(model)`, one run
        The ge cases run with the Numba and thunk caches warm (the common case: a first `ge run` filled them);
        a cold cache adds LLVM's working memory while compiling, which this bench does not measure.
Step 2 (report): date, CPU, commit, load average; per case its phases (RSS after, peak so far, in MiB); the
        ratio of ge's session peak to onnxruntime's.

Measured 2026-12-07 (AMD EPYC, 2 CPUs shared, load 7-13, warm caches), RSS after (peak) in MiB:
  case                      36610c2 (before)              89ebeab (after)
  import ge                 120                           120
  + ge.compile              391 (436)                     288 (334)
  + Session + run           561 (561)                     309 (334)
  + second Session + run    790 (790)                     415 (448): +106, the second plan's weights (97)
  onnxruntime               290 (320)                     297 (326)
  ge / onnxruntime peak     1.75x                         1.02x        (`ge run`: 333 MiB peak, was 576)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

CASES = ("import", "compile", "session", "twice", "ort")


def _status() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MiB."""
    got = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, kb = line.split()[:2]
                got[key] = int(kb) / 1024
    return got["VmRSS:"], got["VmHWM:"]


def _light_path(model: str) -> str:
    """ge.zoo.light_model_path without importing ge (which the onnxruntime case must not pay for)."""
    import importlib.util
    onnx_dir = os.path.dirname(importlib.util.find_spec("onnx").origin)
    return os.path.join(onnx_dir, "backend", "test", "data", "light", f"light_{model}.onnx")


def _child(case: str, model: str) -> None:
    phases = []

    def mark(name):
        rss, hwm = _status()
        phases.append((name, round(rss, 1), round(hwm, 1)))

    mark("python")
    if case == "ort":
        import numpy as np
        import onnxruntime as ort
        mark("import onnxruntime")
        sess = ort.InferenceSession(_light_path(model), providers=["CPUExecutionProvider"])
        mark("InferenceSession")
        feeds = {}
        for i in sess.get_inputs():
            shape = tuple(d if isinstance(d, int) else 1 for d in i.shape)
            n = int(np.prod(shape))
            feeds[i.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
        sess.run(None, feeds)
        mark("run")
    else:
        import ge
        from ge.zoo import light_model_path, reference_feeds
        mark("import ge")
        path = light_model_path(model)
        if case == "compile":
            plan = ge.compile(path)
            mark("ge.compile")
            del plan
        elif case in ("session", "twice"):
            for k in range(2 if case == "twice" else 1):
                sess = ge.Session(path)
                mark("Session" if not k else "second Session")
                sess.run(None, reference_feeds(sess))
                mark("run" if not k else "second run")
                if k == 0 and case == "twice":
                    first = sess   # kept open: two sessions of one model in one process
    print("PHASES " + json.dumps(phases), flush=True)


def _git(*args) -> str:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child, args.model)
        return 0
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            ap.error(f"unknown case '{c}'; choose from {', '.join(CASES)}")
    print(f"date {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC   cpu {_cpu()} x{os.cpu_count()}   "
          f"commit {_git('rev-parse', '--short', 'HEAD')}{' (dirty)' if _git('status', '--porcelain') else ''}   "
          f"model {args.model}")
    peaks: dict[str, list[float]] = {}
    for r in range(args.rounds):
        for case in cases:
            load = os.getloadavg()[0]
            out = subprocess.run([sys.executable, __file__, "--child", case, "--model", args.model],
                                 capture_output=True, text=True)
            line = next((x for x in out.stdout.splitlines() if x.startswith("PHASES ")), None)
            if out.returncode or line is None:
                print(f"{case}: failed (exit {out.returncode})\n{out.stderr[-2000:]}")
                return 1
            phases = json.loads(line[7:])
            peaks.setdefault(case, []).append(phases[-1][2])
            steps = "   ".join(f"{name} {rss:.0f} (peak {hwm:.0f})" for name, rss, hwm in phases[1:])
            print(f"round {r}  {case:8s} load {load:4.1f}   MiB: {steps}")
    if "session" in peaks and "ort" in peaks:
        ge_peak, ort_peak = min(peaks["session"]), min(peaks["ort"])
        print(f"peak RSS: ge session {ge_peak:.0f} MiB, onnxruntime {ort_peak:.0f} MiB: {ge_peak / ort_peak:.2f}x "
              f"(lowest of {args.rounds} round{'s' * (args.rounds > 1)}; load {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

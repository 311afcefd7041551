"""Cold start as a new user meets it: a fresh clone, empty caches, output piped; then the same warm.

    python bench/cold_start.py [--cases resnet50,inception_v1,bert] [--rounds 1] [--commit REV] [--keep DIR]
                               [--workers N]   (GE_COMPILE_WORKERS: 0 compiles in one process)
    python bench/cold_start.py --report DIR       the report of a run kept in DIR (its results.json)

Step 1 (the clone): `git clone` of the repo at --commit (HEAD) into a temp folder: no `__pycache__` (Numba's cache lives
        there, ge/npu/jitcache.py), and GE_THUNK_CACHE set to a fresh folder (runtime_v1's thunks).
Step 2 (cold, then warm): each case runs in a child process with stdout and stderr piped to this one, which
        stamps every line as it arrives: first line, longest silence (between lines, or from the start to the
        first, or from the last to the exit), total. Cases: `ge run` (ResNet-50, the default model), `ge run
        inception_v1` (after ResNet-50 in the same clone: the kernels they share come from the cache, as for a
        user's second model), and a BERT 4 x 256 export's first `Session(...).run` through the Python API (with
        GE_PROGRESS=1: what a user sees who asks for it; the API is silent by default, logging aside).
        The child records Numba's compile events (numba.core.event "numba:compile": a cache miss of one
        specialization of one jitted function, callees compiled inside their caller's event) and at its exit
        writes, per jitted function, the seconds of its compiles (own: less the callees' compiles), the
        specializations compiled, and the disk-cache hits of ge's kernels.
Step 3 (report): date, CPU, commit, load average before and after each run; per case cold beside warm, wall and
        CPU seconds (the case's process and its compile workers, ge/npu/compile_workers.py); per
        case the functions that took the most compile time, and the share of the total spent compiling.
The cold runs are CPU-heavy (minutes on 2 cores): run this a couple of times, not in a loop, and read the
load averages printed with it (the machine is shared).

Measured 2026-12-07 (AMD EPYC, 2 CPUs shared by ~6 sessions compiling: load average 6-17 throughout, so
seconds are 3-10x a quiet machine's; compare shares, not totals), `ge run` piped, fresh clone:
  4f49346 (before)  first line 9.5 s, longest silence 1679.5 s, total 1730.5 s; Numba compiled 82 functions
                    (97 specializations) for 1539 s: conv.conv 1293 s with its callees, of which the depthwise
                    path 407 s and the GEMM lowerings 690 s that ResNet-50 (every conv PACKED) never runs.
  c657915 (after)   first line 15.9 s (importing ge under load 16), longest silence 24.1 s (progress lines
                    every 2.1 s median), total 1481.6 s; 65 functions (79 specializations) for 1316 s under a
                    heavier load (the GEMM's unchanged _streamed/_blocked took 1.31x their before-time):
                    conv.conv 216 s; the GEMM (gemm_block 813 s with callees) now compiles for the FC alone.
Each ge kernel compiled one specialization; only Numba's own overloads (min, max, np.empty) several.

The GEMM's register tiles once per stride kind, IMPLICIT without its 1-position tail (2026-12-08 00:19, both
commits side by side, `--cases resnet50,bert --rounds 1`, load 16-21: wall seconds ~10x a quiet machine's, so
read the CPU seconds): 314ebc6 -> 74d6532's parent af059af (the same tiles for these two cases)
  resnet50 cold     CPU 55.4 -> 50.9 s; conv_implicit._panels_fused 218 -> 144 s of compile (wall, loaded)
  bert cold         CPU 55.9 -> 37.1 s; microkernel._tiles 4 -> 1 specializations (207 -> 35 s), _panel_a
                    2 -> 1 (99 -> 41 s), _panel 3 -> 1; gemm_block with its callees 335 -> 76 s
  warm              resnet50 4.7 vs 5.0 CPU s, bert 3.5 vs 3.5 (unchanged)

Compile workers (ge/npu/compile_workers.py), 2026-12-07 20:58-21:30, `--cases resnet50 --rounds 0`, a fresh clone
each, load 8-15 (other sessions compiling), one worker (--workers 1) vs one process (--workers 0), alternating:
the case's own process spent 32.1-33.1 s of CPU instead of 47.3-52.1 s (the worker 25.1-25.5 s; all together
58.1-59.5 s vs 48.5-53.5 s: +11-20%, the worker's start and Numba's uncached overloads compiled twice), but
wall time got no better: 201.5 and 195.0 s vs 148.6 s; 197.6 vs 189.6 s. Linux gives each session (an
autogroup) its share of a busy machine, not each process, so the worker's CPU came out of the same share. Hence
`auto` starts workers on idle CPUs only; there the case's critical path is its own process's CPU (-36%).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    "resnet50": ["-m", "ge.cli", "run"],
    "inception_v1": ["-m", "ge.cli", "run", "inception_v1"],
    "bert": ["--bert"],
}


# -- the child: compile events recorded, then the case ---------------------------------------------------

def _record_compiles(out_path: str) -> None:
    """Numba's compile events of this process, written to out_path (JSON) at exit."""
    import atexit

    from numba.core import event

    stack, per = [], {}

    class Listener(event.Listener):
        def on_start(self, ev):
            d = ev.data.get("dispatcher")
            py = getattr(d, "py_func", None)
            name = f"{py.__module__}.{py.__qualname__}" if py else "?"
            stack.append([name, time.perf_counter(), 0.0])

        def on_end(self, ev):
            name, t0, inner = stack.pop()
            took = time.perf_counter() - t0
            r = per.setdefault(name, {"seconds": 0.0, "own": 0.0, "compiled": 0, "outer": 0})
            r["seconds"] += took
            r["own"] += took - inner
            r["compiled"] += 1
            r["outer"] += not stack
            if stack:
                stack[-1][2] += took

    event.register("numba:compile", Listener())

    def dump():
        hits = {}
        for name, mod in list(sys.modules.items()):
            if not name.startswith(("ge.", "runtime_", "_ge_thunk_")):
                continue
            for attr, fn in list(vars(mod).items()):
                st = getattr(fn, "stats", None) if hasattr(fn, "py_func") else None
                n = sum(getattr(st, "cache_hits", {}).values()) if st is not None else 0
                if n:
                    hits[f"{name}.{attr}"] = n
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = {"self": me.ru_utime + me.ru_stime, "workers": kids.ru_utime + kids.ru_stime}   # compile workers
        Path(out_path).write_text(json.dumps({"compiles": per, "cache_hits": hits, "cpu_split": cpu}))

    atexit.register(dump)


def bert_first_run() -> None:
    """A BERT 4 x 256 export's first Session(...).run through the Python API, as a user writes it."""
    import ge
    from ge import exports
    t0 = time.perf_counter()
    sess = ge.Session(exports.load("bert_4x256"))
    out = sess.run(None, exports.bert_feeds(1, 128))
    print(f"bert_4x256 first run: {len(out)} outputs, {out[0].shape}, runtime {sess.runtime}, "
          f"{time.perf_counter() - t0:.2f} s after import", flush=True)


def _child() -> None:
    """python bench/cold_start.py --child OUT.json ARGS...: record compiles, then run ARGS as python would."""
    out, args = sys.argv[2], sys.argv[3:]
    _record_compiles(out)
    sys.argv = [sys.executable] + args
    if args[0] == "--bert":
        bert_first_run()
    elif args[0] == "-m":
        import runpy
        sys.argv = [args[1]] + args[2:]
        try:
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        except SystemExit as e:
            if e.code:
                raise


# -- the parent: stamp the lines ------------------------------------------------------------------------

def run_case(clone: Path, thunks: Path, case: str, log, workers: str | None = None) -> dict:
    stats = Path(tempfile.mkstemp(suffix=".json")[1])
    env = dict(os.environ, PYTHONPATH=str(clone), GE_THUNK_CACHE=str(thunks), GE_PROGRESS="1",
               PYTHONUNBUFFERED="1")
    if workers is not None:   # compile worker processes (ge/npu/compile_workers.py): 0 = one process
        env["GE_COMPILE_WORKERS"] = workers
    # this file runs the child (an older commit's clone may have none); the clone's ge is on the path
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(stats), *CASES[case]]
    load0 = os.getloadavg()[0]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ, "out")
    sel.register(p.stderr, selectors.EVENT_READ, "err")
    first, last, silence, n_lines, open_ = None, t0, 0.0, 0, 2
    while open_:
        for key, _ in sel.select():
            line = key.fileobj.readline()
            if not line:
                sel.unregister(key.fileobj)
                open_ -= 1
                continue
            now = time.perf_counter()
            first = now - t0 if first is None else first
            silence, last = max(silence, now - last), now
            n_lines += 1
            log.write(f"{now - t0:8.2f} {key.data} {line.decode(errors='replace').rstrip()}\n")
            log.flush()
    p.wait()
    end = time.perf_counter()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)   # the case's process and its compile workers
    cpu = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
    silence = max(silence, end - last)
    data = json.loads(stats.read_text()) if stats.stat().st_size else {"compiles": {}, "cache_hits": {}}
    stats.unlink()
    return {"case": case, "rc": p.returncode, "first": first, "silence": silence, "total": end - t0,
            "lines": n_lines, "load": (load0, os.getloadavg()[0]), "cpu": cpu, **data}


def _compile_seconds(r: dict) -> float:
    return sum(c["own"] for c in r["compiles"].values())


def report(results: dict, top: int) -> None:
    print(f"\n{'case':14s} {'':5s} {'first line':>10s} {'longest silence':>16s} {'total':>9s} {'CPU s':>7s} {'compiling':>10s} "
          f"{'compiled':>9s} {'cache hits':>10s}  load 1-min (start, end)  rc")
    for case, runs in results.items():
        for label, r in runs:
            n = sum(c["compiled"] for c in r["compiles"].values())
            hits = sum(r["cache_hits"].values())
            first = f"{r['first']:.2f}" if r["first"] is not None else "-"
            print(f"{case:14s} {label:5s} {first:>10s} {r['silence']:16.2f} {r['total']:9.2f} {r.get('cpu', 0):7.2f} "
                  f"{_compile_seconds(r):10.2f} {n:9d} {hits:10d}  {r['load'][0]:.2f}, {r['load'][1]:.2f}"
                  f"{'':10s} {r['rc']}")
    for case, runs in results.items():
        cold = runs[0][1]
        rows = sorted(cold["compiles"].items(), key=lambda kv: -kv[1]["own"])
        print(f"\n{case} cold: where the compile time went ({_compile_seconds(cold):.1f} s of {cold['total']:.1f} s "
              f"total; own = less the callees compiled inside; specializations compiled; as a kernel / callee)")
        for name, c in rows[:top]:
            print(f"  {name.removeprefix('ge.kernels.'):60s} own {c['own']:7.2f} s  incl. callees {c['seconds']:7.2f} s"
                  f"  {c['compiled']:3d} specializations ({c['outer']} as the outer compile)")
        if len(rows) > top:
            rest = rows[top:]
            print(f"  ... {len(rest)} more functions, own {sum(c['own'] for _, c in rest):.2f} s")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child()
        return 0
    if len(sys.argv) > 2 and sys.argv[1] == "--report":   # a run's results.json again (e.g. one cut short)
        report(json.loads((Path(sys.argv[2]) / "results.json").read_text()), 15)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--rounds", type=int, default=1, help="warm runs after the cold one (each case)")
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--commit", default="HEAD", help="the commit to clone (e.g. a baseline to compare)")
    ap.add_argument("--keep", help="clone into this folder (kept) instead of a temp one")
    ap.add_argument("--top", type=int, default=15, help="functions listed per case")
    ap.add_argument("--workers", help="GE_COMPILE_WORKERS for the cases (0: compile in one process; default auto)")
    args = ap.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    bad = [c for c in cases if c not in CASES]
    if bad:
        ap.error(f"unknown case(s) {', '.join(bad)}: choose among {', '.join(CASES)}")
    commit = subprocess.run(["git", "-C", args.repo, "rev-parse", "--short", args.commit], capture_output=True,
                            text=True).stdout.strip()
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else "?"
    print(f"date {time.strftime('%Y-%m-%d %H:%M:%S %Z')}   cpu {cpu} x {os.cpu_count()}   commit {commit}   "
          f"python {platform.python_version()}")
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ge-cold-"))
    clone, thunks = base / "ge", base / "thunks"
    subprocess.run(["git", "clone", "--quiet", args.repo, str(clone)], check=True)   # Step 1: no caches
    subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", commit], check=True)
    thunks.mkdir(mode=0o700)
    log_path = base / "lines.log"
    print(f"clone {clone} (its HEAD {commit}); every line stamped in {log_path}")
    results = {}
    with open(log_path, "w") as log:
        for case in cases:   # Step 2: cold (the first process to compile them), then warm
            for k in range(1 + args.rounds):
                label = "cold" if k == 0 else "warm"
                log.write(f"== {case} {label}\n")
                log.flush()
                r = run_case(clone, thunks, case, log, args.workers)
                results.setdefault(case, []).append((label, r))
                (base / "results.json").write_text(json.dumps(results))   # kept as it grows: --report BASE
                split = r.get("cpu_split", {})
                print(f"{case:14s} {label}: first line {r['first'] or 0:.2f} s, longest silence "
                      f"{r['silence']:.2f} s, total {r['total']:.2f} s, CPU {r['cpu']:.2f} s (its process "
                      f"{split.get('self', 0):.2f}, compile workers {split.get('workers', 0):.2f}; rc {r['rc']}; "
                      f"load {r['load'][0]:.1f} -> {r['load'][1]:.1f})", flush=True)
    report(results, args.top)   # Step 3
    return 0


if __name__ == "__main__":
    sys.exit(main())

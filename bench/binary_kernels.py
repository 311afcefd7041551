"""Binary kernel families (ge/kernels/binary.py over broadcast.py's walkers): compile CPU per family and dtype,
and warm speed on one core, this tree against another commit's, side by side in one process.

    python bench/binary_kernels.py --before ce082aa            # compile table, then speed table
    python bench/binary_kernels.py --before ce082aa --speed    # speed only

The other commit's binary.py and broadcast.py are loaded from git as a package of their own (their imports
of the rest of ge.kernels resolve to this tree's), so both sides run in one process. Compile CPU is
thread CPU time of a fresh, uncached dispatcher of each kernel for one dtype (the dtype-free helpers a
side calls, e.g. broadcast._start, are compiled first and shown on their own line); speed is each kernel
called directly on one core (block 0 of 1), median and best of alternating rounds (bench/timing.py).
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import alternate, header  # noqa: E402

import ge.kernels.binary as after  # noqa: E402
from ge.kernels.broadcast import broadcast_strides  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def load_before(rev: str):
    """binary.py of `rev` as module `before_k.binary`, with its broadcast.py beside it."""
    pkg = Path(tempfile.mkdtemp()) / "before_k"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("binary", "broadcast"):
        src = subprocess.run(["git", "show", f"{rev}:ge/kernels/{name}.py"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
        for mod in ("arity", "blocks", "cast", "registry", "tiling"):
            src = src.replace(f"from .{mod} import", f"from ge.kernels.{mod} import")
        src = src.replace("register(", "(lambda *a, **k: (lambda f: f))(")  # ge's own registry keeps its kernels
        (pkg / f"{name}.py").write_text(src)
    sys.path.insert(0, str(pkg.parent))
    return importlib.import_module("before_k.binary")


def _args(family: str, dt, n=64):
    """Arguments of one call of `family` for dtype dt on a same-shape row of n elements, and the op codes."""
    a, b = np.ones(n, dt), np.ones(n, dt)
    sh, s = np.array([1, n], np.int64), np.array([0, 1], np.int64)
    out = np.empty(n, np.bool_ if family == "compare" else dt)
    if family in ("power", "divide", "prelu"):
        return (a, b, out, sh, s, s, 0, 1)
    if family == "where":
        return (np.ones(n, np.bool_), a, b, out, sh, s, s, s, 0, 1)
    if family == "variadic":
        return (*(a,) * 8, out, 2, 0, sh, np.concatenate([s] * 9), 0, 1)
    return (a, b, out, 0, sh, s, s, 0, 1)


FAMILIES = {  # family: dtypes the node cases compile it for
    "binary_arith": ("float32", "float64", "int8", "int32", "int64", "uint8"),
    "divide": ("float32",),
    "compare": ("float32", "int64", "bool"),
    "int_divmod": ("int32", "uint8"),
    "float_mod": ("float32",),
    "logic": ("bool", "int32"),
    "bitshift": ("uint8", "uint64"),
    "power": ("float32", "int64"),
    "variadic": ("float32", "int32"),
    "where": ("float32", "int64"),
}


def compile_cpu(mod, family: str, dt: str) -> float | None:
    fn = getattr(mod, family, None)
    if fn is None:
        return None
    fresh = njit(nogil=True, error_model="numpy")(fn.py_func)
    t = time.thread_time()
    fresh(*_args(family, dt))
    return time.thread_time() - t


def compile_table(sides: dict) -> None:
    print("compile CPU s per family and dtype (fresh dispatcher, no cache); helpers first")
    bc = sys.modules["ge.kernels.broadcast"]   # this tree's dtype-free helpers: once a process
    if hasattr(bc, "_start"):
        shape, s = np.array([1, 64], np.int64), np.array([0, 1], np.int64)
        t = time.thread_time()
        bc._offset(bc._start(shape, 0), s), bc._deltas(shape, s)
        print(f"  after's helpers (_start, _offset, _deltas) {time.thread_time() - t:6.2f}")
    print(f"{'family':13s} {'dtype':8s} " + " ".join(f"{n:>8s}" for n in sides) + "    ratio")
    for family, dtypes in FAMILIES.items():
        for dt in dtypes:
            got = [compile_cpu(mod, family, dt) for mod in sides.values()]
            if family == "divide" and got[0] is None:   # before: Div was binary_arith's fourth op
                got[0] = 0.0
            cells = " ".join(f"{g:8.2f}" if g is not None else f"{'-':>8s}" for g in got)
            ratio = got[1] / got[0] if got[0] else float("nan")
            print(f"{family:13s} {dt:8s} {cells}   {ratio:6.2f}", flush=True)


def speed_cases(mod):
    """name -> zero-argument call of `mod`'s kernels on one core."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 64, 56, 56)).astype(np.float32)
    y = rng.standard_normal((1, 64, 56, 56)).astype(np.float32) + 3
    bias = rng.standard_normal((64, 1, 1)).astype(np.float32)
    one = np.array(2.0, np.float32)
    xi, yi = np.arange(4, dtype=np.int64), np.arange(1, 5, dtype=np.int64)
    out, outb, outi = np.empty_like(x), np.empty(x.shape, np.bool_), np.empty(4, np.int64)
    work = x.copy()
    xi32 = rng.integers(-1000, 1000, x.shape).astype(np.int32)
    yi32, bi32 = xi32 % 7 + 8, np.arange(3, 67, dtype=np.int32).reshape(64, 1, 1)
    outi32 = np.empty_like(xi32)
    div = getattr(mod, "divide", None)

    def bin2(fn, a, b, o, *code):
        st = broadcast_strides(o.shape, a.shape, b.shape)
        fa, fb, fo = a.reshape(-1), b.reshape(-1), o.reshape(-1)
        return lambda: fn(fa, fb, fo, *code, *st, 0, 1)

    return {
        "Add f32 same": bin2(mod.binary_arith, x, y, out, 0),
        "Add f32 bias C11": bin2(mod.binary_arith, x, bias, out, 0),
        "Add f32 in place": bin2(mod.binary_arith, work, y, work, 0),
        "Mul f32 scalar": bin2(mod.binary_arith, x, one, out, 2),
        "Sub f32 scalar-x": bin2(mod.binary_arith, one, x, out, 1),
        "Div f32 same": bin2(div, x, y, out) if div else bin2(mod.binary_arith, x, y, out, 3),
        "Add i64 4": bin2(mod.binary_arith, xi, yi, outi, 0),
        "Equal f32": bin2(mod.compare, x, y, outb, 0),
        "Less f32 bias": bin2(mod.compare, x, bias, outb, 1),
        "Div i32 same": bin2(mod.int_divmod, xi32, yi32, outi32, 0),
        "Mod i32 bias C11": bin2(mod.int_divmod, xi32, bi32, outi32, 1),
        "Mod f32 same": bin2(mod.float_mod, x, y, out, 0),
        "Pow f32 scalar": bin2(mod.power, x, one, out),
    }


def speed_table(sides: dict, rounds: int, only: str = "") -> None:
    cases = {name: speed_cases(mod) for name, mod in sides.items()}
    names = list(sides)
    print(f"\nwarm speed, one core, us per call: median (best) of {rounds} alternating rounds of 20 calls")
    print(f"{'case':18s} " + " ".join(f"{n:>18s}" for n in names) + "   ratio med/best")
    for case in cases[names[0]]:
        if only and not any(w in case for w in only.split(",")):
            continue
        fns = {n: cases[n][case] for n in names}
        for f in fns.values():
            f()
        got = alternate({n: (lambda f=f: [f() for _ in range(20)]) for n, f in fns.items()}, rounds)
        cells = " ".join(f"{got[n][0] / 20 * 1e6:9.2f} ({got[n][1] / 20 * 1e6:6.2f})" for n in names)
        r_med, r_best = (got[names[1]][i] / got[names[0]][i] for i in (0, 1))
        print(f"{case:18s} {cells}   {r_med:5.3f} {r_best:5.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="HEAD", help="the commit to compare with")
    ap.add_argument("--speed", action="store_true", help="speed only")
    ap.add_argument("--compile", action="store_true", help="compile only")
    ap.add_argument("--rounds", type=int, default=41)
    ap.add_argument("--cases", default="", help="comma-separated substrings of the speed cases to run")
    args = ap.parse_args()
    header("binary kernel families: compile CPU and warm speed, before vs after")
    sides = {"before": load_before(args.before), "after": after}
    if not args.speed:
        compile_table(sides)
    if not args.compile:
        speed_table(sides, args.rounds, args.cases)


if __name__ == "__main__":
    main()

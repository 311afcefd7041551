"""float32 <-> float16/bfloat16 conversion kernels (ge/kernels/half.py), one thread, side by side.

    python bench/half_convert.py [n]

f32_to_half / from_half use LLVM's fptrunc/fpext on half (F16C's vcvtps2ph/vcvtph2ps when the loop
vectorizes) and bfloat16 bit arithmetic; to_half is the path other source types take (float64 rounded to odd in
float32, then to nearest even: one rounding); numpy's astype is the reference.
"""
import datetime
import os
import sys
import time

import ml_dtypes
import numpy as np

from ge.kernels import half

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402


def best(fn, reps=7):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts)


def main(n=1 << 20):
    print(f"{n:,} elements, one thread, best of 7, {datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}")
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    x64, bits, back = x.astype(np.float64), np.empty(n, np.uint16), np.empty(n, np.float32)
    for kind, dt, name in ((half.F16, np.float16, "float16"), (half.BF16, ml_dtypes.bfloat16, "bfloat16")):
        src = x.astype(dt).view(np.uint16)
        rows = {
            "f32 -> 16 (kernel)": lambda: half.f32_to_half(x, bits, kind, 0, 1),
            "f64 -> 16 (round to odd)": lambda: half.to_half(x64, bits, kind, 0, 1),
            "f32 -> 16 (numpy astype)": lambda: x.astype(dt),
            "16 -> f32 (kernel)": lambda: half.from_half(src, back, kind, 0, 1),
            "16 -> f32 (numpy astype)": lambda: src.view(dt).astype(np.float32),
        }
        for fn in rows.values():
            fn()
        for label, fn in rows.items():
            print(f"{name:9s} {label:30s} {best(fn) / n * 1e9:6.2f} ns/element")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20)

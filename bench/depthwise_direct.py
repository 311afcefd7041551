"""conv_depthwise's direct path (_direct: x's rows shifted in registers) against its padded copy, one core:

    python bench/depthwise_direct.py [C HW K ...]      (default: the blocks' depthwise convs)

Two copies of `depthwise` are compiled in this process, one with conv_depthwise.DIRECT off and one with it
on (a global is frozen when Numba compiles), run on the same arguments alternating, medians of 100. The
module's default (DIRECT: AMD's AVX-512 only) comes from these numbers; the bits are the same either way.
"""
from __future__ import annotations

import sys
import time

import numpy as np
from numba import njit

import ge.kernels.conv_depthwise as D
from ge.kernels.registry import KernelContext, TensorSpec, lookup

SHAPES = [(144, 56, 3), (240, 28, 5), (120, 28, 5), (96, 56, 7)]   # MobileNetV2, MBConv, MobileNetV3, ConvNeXt


def variants(C: int, HW: int, K: int):
    """{direct: call} for a C x HW x HW depthwise KxK conv (pads K//2, bias), and the outputs they write."""
    ctx = KernelContext("Conv", "dw", {"group": C, "pads": [K // 2] * 4},
                        [TensorSpec((1, C, HW, HW), np.float32), TensorSpec((C, 1, K, K), np.float32),
                         TensorSpec((C,), np.float32)], [None] * 3, 17, cores=1)
    launch = lookup("Conv", "", 17).bind(ctx)
    _, mode, _, _, act, p0, p1, tile, _, _ = launch.args
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(n).astype(np.float32) for n in (C * HW * HW, C * K * K, C))
    ws = np.zeros(launch.workspaces[0].shape, np.float32)
    calls, outs = {}, {}
    saved = D.DIRECT
    try:
        for direct in (False, True):
            D.DIRECT = direct
            fn = njit(nogil=True)(D.depthwise.py_func)
            y = np.zeros(C * HW * HW, np.float32)
            calls[direct] = lambda fn=fn, y=y: fn(x, w, b, x, y, ws, np.empty(K * K, np.int64), 0, C, C, 1, HW, HW,
                                                  HW, HW, K, K, 1, 1, K // 2, K // 2, tile, 1, 0, act, p0, p1)
            calls[direct]()   # compiles, reading DIRECT now
            outs[direct] = y
    finally:
        D.DIRECT = saved
    return calls, outs, (x, w, b)


def main(argv) -> None:
    shapes = [tuple(int(a) for a in argv[i:i + 3]) for i in range(0, len(argv), 3)] or SHAPES
    for C, HW, K in shapes:
        calls, outs, _ = variants(C, HW, K)
        t = {False: [], True: []}
        for _ in range(100):
            for direct, call in calls.items():
                t0 = time.perf_counter()
                call()
                t[direct].append(time.perf_counter() - t0)
        print(f"{C:4d} x {HW:3d} x {HW:3d} {K}x{K}: padded {np.median(t[False]) * 1e3:.3f} ms, direct "
              f"{np.median(t[True]) * 1e3:.3f} ms, same bits {np.array_equal(outs[False], outs[True])}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

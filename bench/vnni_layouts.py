"""conv_vnni.vnni_conv with NCHW or NHWC input and output (passes/nhwc_int8.py's layouts), on SqueezeNet's
fire-module shapes, one thread, best of `reps`, the four layouts alternating within each repetition.

    taskset -c 0 python bench/vnni_layouts.py [--reps 50]
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys

import numpy as np

from ge.kernels.conv import _geom as conv_geom
from ge.kernels.conv_vnni import MR, NR, pack_weights, packed_size, vnni_conv

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402
from timing import alternating_best  # noqa: E402


def conv(C, M, H, K, pad, x_nhwc, y_nhwc):
    """A call of the packed kernel on random uint8 activations (zero point 128), one block."""
    OH = H + 2 * pad - K + 1
    geom = conv_geom(1, C, [H, H], M, [OH, OH], [K, K], [1, 1], [pad, pad], [1, 1], 1)
    C4, M4 = -(-C // 4) * 4, -(-M // 4) * 4
    r = np.random.default_rng(0)
    wp, wsum = np.empty(packed_size(M, C, K, K), np.int8), np.empty(M, np.int32)
    pack_weights(r.integers(-127, 127, M * C * K * K).astype(np.int8), M, C, K, K, C4, wp, wsum)
    x = r.integers(0, 255, H * H * C4 if x_nhwc else C * H * H).astype(np.uint8)
    y = np.empty(OH * OH * (M4 if y_nhwc else M), np.uint8)
    Hp = max(H + pad, OH - 1 + K)
    xp, ws, qm = np.empty(Hp * Hp * C4 + 64, np.uint8), np.empty(2 * M + MR * NR, np.int32), np.empty(M)
    f32 = lambda v: np.array([v], np.float32)  # noqa: E731
    args = (x, f32(0.02), np.array([128], np.uint8), wp, np.full(M, 0.01, np.float32), f32(0.5),
            np.array([128], np.uint8), np.zeros(M, np.int32), wsum, y, xp, np.empty(1, np.int8), ws, qm, geom,
            0, 1, M, 0, 1, 0.0, 255.0, 0, 1, x_nhwc, y_nhwc, 0, 0, 1)
    return lambda: vnni_conv(*args)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    reps = ap.parse_args().reps
    print(f"VNNI conv by layout, one thread, best of {reps}, {datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}")
    for C, M, H, K, pad in ((16, 64, 55, 1, 0), (16, 64, 55, 3, 1), (64, 16, 55, 1, 0), (64, 256, 13, 1, 0)):
        fns = [conv(C, M, H, K, pad, xn, yn) for xn in (0, 1) for yn in (0, 1)]
        us = [b * 1e6 for b in alternating_best(fns, reps)]
        print(f"conv {C:3d}->{M:3d} {K}x{K} on {H}x{H}  NCHW->NCHW {us[0]:6.0f}  NCHW->NHWC {us[1]:6.0f}"
              f"  NHWC->NCHW {us[2]:6.0f}  NHWC->NHWC {us[3]:6.0f} us  ({us[0] / us[3]:.2f}x)")


if __name__ == "__main__":
    main()

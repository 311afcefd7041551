"""The kernel paths chosen by the CPU at import, timed both ways on this machine, one core:

    python bench/kernel_paths.py [--only BLOCKED,DIRECT,REUSE,BUFFERED,PAIR,FLAT,FLAT_POOLS] [--rounds 100]

  BLOCKED   conv_depthwise: whole blocks of 16 channels on the lanes (conv_depthwise_blocked), or all as
            rows (the other depthwise flags are timed without it)
  DIRECT    conv_depthwise: stride-1 rows shifted in registers, or read from the padded copy
  REUSE     conv_depthwise: stride-1 tiles of four rows loading each input vector once for all the rows it
            serves (_reused, kernels 5 or more wide), or once per tap (_wide)
  BUFFERED  pool_plane: every window through the row buffer, or windows up to 3 wide (5 at stride 2) in
            registers (vnext shifts)
  PAIR      conv_lowering._pad_copy: stride-2 column phases split in vectors (veven / vodd), or copied
            element by element (the depthwise convs at stride 2 that read them, timed whole)
  FLAT      conv_depthwise: stride-1 "same" planes as flat runs (_flat; where conv_depthwise.flat_plane
            allows), or by the row tiles on the padded copy
  FLAT_POOLS  pool_plane: stride-1 "same" windows as flat runs of the plane (_flat, whatever its width), or
            row by row; chosen on the host (pool_plane.flat: planes narrower than FLAT_MAX_VECTORS vectors),
            so one compiled pool2d serves both

Two copies of the kernel are compiled in this process (specialize.both_ways), run on the same arguments
alternating, medians; the bits must be the same either way. Each flag's default in its module comes from
these numbers on the CPUs its comment names; the header says what this machine's LLVM calls its CPU.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import time

import numpy as np

import ge.kernels.conv_depthwise as D
import ge.kernels.conv_lowering as CL
import ge.kernels.pool_plane as P
from ge.kernels.registry import KernelContext, TensorSpec, lookup
from ge.kernels.simd import host_cpu
from ge.kernels.specialize import both_ways

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402

# channels, height = width, kernel, stride: the blocks' depthwise convs (MobileNetV2, MBConv, MobileNetV3,
# ConvNeXt) at stride 1, ShuffleNet's and MobileNetV2's at stride 2
DW1 = [(144, 56, 3, 1), (240, 28, 5, 1), (120, 28, 5, 1), (96, 56, 7, 1)]
DW2 = [(112, 56, 3, 2), (136, 28, 3, 2), (272, 14, 3, 2)]
DW_SMALL = [(544, 7, 3, 1), (272, 14, 3, 1), (136, 28, 3, 1), (1152, 7, 5, 1), (672, 14, 5, 1), (240, 28, 5, 1),
            (768, 7, 7, 1)]   # MobileNetV2 / ShuffleNet 3x3, EfficientNet 5x5, ConvNeXt 7x7 (last stage)
# op, channels, height = width, window, stride (pads window // 2): Inception v2, ShuffleNet, ResNet-50
POOLS = [("AveragePool", 192, 28, 3, 1), ("AveragePool", 576, 14, 3, 1), ("MaxPool", 1024, 7, 3, 1),
         ("MaxPool", 64, 112, 3, 2), ("AveragePool", 136, 28, 3, 2), ("AveragePool", 272, 14, 3, 2)]
SAME_POOLS = [("AveragePool", 192, 28, 3, 1), ("AveragePool", 576, 14, 3, 1), ("AveragePool", 1024, 7, 3, 1),
              ("MaxPool", 1024, 7, 3, 1), ("MaxPool", 480, 14, 3, 1), ("MaxPool", 64, 56, 3, 1)]


def _depthwise_call(fn, C, HW, K, S):
    """A call of conv_depthwise.depthwise copy fn on a C x HW x HW KxK conv at stride S (pads K // 2, a bias)."""
    ctx = KernelContext("Conv", "dw", {"group": C, "pads": [K // 2] * 4, "strides": [S, S]},
                        [TensorSpec((1, C, HW, HW), np.float32), TensorSpec((C, 1, K, K), np.float32),
                         TensorSpec((C,), np.float32)], [None] * 3, 17, cores=1)
    launch = lookup("Conv", "", 17).bind(ctx)
    _, mode, _, _, act, p0, p1, tile, _, _ = launch.args
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(n).astype(np.float32) for n in (C * HW * HW, C * K * K, C))
    OH = (HW + 2 * (K // 2) - K) // S + 1
    ws, y = np.zeros(launch.workspaces[0].shape, np.float32), np.zeros(C * OH * OH, np.float32)
    taps = np.empty(K * K, np.int64)
    return lambda: fn(x, w, b, x, y, ws, taps, 0, C, C, 1, HW, HW, OH, OH, K, K, S, S, K // 2, K // 2, tile,
                      1, 0, act, p0, p1), y


def _pool_call(fn, op, C, HW, K, S, flat_max=None):
    """A call of pool_plane.pool2d copy fn on a KxK window at stride S (pads K // 2); flat_max: the host's
    FLAT_MAX_VECTORS for the launch (None: the module's)."""
    saved = P.FLAT_MAX_VECTORS
    P.FLAT_MAX_VECTORS = saved if flat_max is None else flat_max
    try:
        ctx = KernelContext(op, "p", {"kernel_shape": [K, K], "strides": [S, S], "pads": [K // 2] * 4},
                            [TensorSpec((1, C, HW, HW), np.float32)], [None], 13, cores=1)
        rc, mode, ident, geom = lookup(op, "", 13).bind(ctx).args
    finally:
        P.FLAT_MAX_VECTORS = saved
    x = np.random.default_rng(0).standard_normal(C * HW * HW).astype(np.float32)
    OH = (HW + 2 * (K // 2) - K) // S + 1
    y = np.zeros(C * OH * OH, np.float32)
    return lambda: fn(x, y, rc, mode, ident, geom, 0, 1), y


def _cases(flag: str):
    """[(label, {value: (call, output)})] for one flag; the depthwise rows' flags without BLOCKED (which would
    take every whole block of 16 channels)."""
    saved, D.BLOCKED = D.BLOCKED, flag == "BLOCKED"
    try:
        return _flag_cases(flag)
    finally:
        D.BLOCKED = saved


def _flag_cases(flag: str):
    if flag == "BLOCKED":
        copies = both_ways(D, "BLOCKED", D.depthwise, lambda fn: _depthwise_call(fn, 16, 9, 3, 1)[0]())
        return [(f"depthwise {C} x {HW} x {HW} {K}x{K}/{S}", {v: _depthwise_call(fn, C, HW, K, S)
                                                               for v, fn in copies.items()})
                for C, HW, K, S in DW1 + DW2 + DW_SMALL]
    if flag == "DIRECT":
        copies = both_ways(D, "DIRECT", D.depthwise, lambda fn: _depthwise_call(fn, 2, 20, 3, 1)[0]())
        return [(f"depthwise {C} x {HW} x {HW} {K}x{K}/{S}", {v: _depthwise_call(fn, C, HW, K, S)
                                                               for v, fn in copies.items()}) for C, HW, K, S in DW1]
    if flag == "FLAT":
        copies = both_ways(D, "FLAT", D.depthwise, lambda fn: _depthwise_call(fn, 2, 7, 3, 1)[0]())
        return [(f"depthwise {C} x {HW} x {HW} {K}x{K}/{S}", {v: _depthwise_call(fn, C, HW, K, S)
                                                               for v, fn in copies.items()}) for C, HW, K, S in DW_SMALL]
    if flag == "FLAT_POOLS":
        return [(f"{op} {C} x {HW} x {HW} {K}x{K}/{S}", {v: _pool_call(P.pool2d, op, C, HW, K, S, 1 << 20 if v else 0)
                                                          for v in (False, True)}) for op, C, HW, K, S in SAME_POOLS]
    if flag == "REUSE":
        copies = both_ways(D, "REUSE", D.depthwise, lambda fn: _depthwise_call(fn, 2, 20, 3, 1)[0]())
        return [(f"depthwise {C} x {HW} x {HW} {K}x{K}/{S}", {v: _depthwise_call(fn, C, HW, K, S)
                                                               for v, fn in copies.items()})
                for C, HW, K, S in DW1 + [(136, 28, 3, 1)]]
    if flag == "BUFFERED":
        copies = both_ways(P, "BUFFERED", P.pool2d, lambda fn: _pool_call(fn, "MaxPool", 2, 9, 3, 1)[0]())
        return [(f"{op} {C} x {HW} x {HW} {K}x{K}/{S}", {v: _pool_call(fn, op, C, HW, K, S)
                                                          for v, fn in copies.items()}) for op, C, HW, K, S in POOLS]
    # PAIR is frozen into _pad_copy; depthwise calls it, so each way is a depthwise copy compiled after it
    cases = []
    saved = CL.PAIR
    try:
        calls = {}
        for value in (False, True):
            CL.PAIR = value
            pad_copy = both_ways(CL, "PAIR", CL._pad_copy, lambda fn: None)[value]
            D._pad_copy = pad_copy
            calls[value] = both_ways(D, "DIRECT", D.depthwise, lambda fn: None)[D.DIRECT]
            _depthwise_call(calls[value], 2, 20, 3, 2)[0]()
    finally:
        CL.PAIR, D._pad_copy = saved, CL._pad_copy
    for C, HW, K, S in DW2:
        cases.append((f"depthwise {C} x {HW} x {HW} {K}x{K}/{S}",
                      {v: _depthwise_call(fn, C, HW, K, S) for v, fn in calls.items()}))
    return cases


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="BLOCKED,DIRECT,REUSE,BUFFERED,PAIR,FLAT,FLAT_POOLS")
    ap.add_argument("--rounds", type=int, default=100)
    args = ap.parse_args(argv)
    print(f"kernel paths, one core, {datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}, LLVM CPU "
          f"{host_cpu()!r}; defaults here: BLOCKED {D.BLOCKED}, DIRECT {D.DIRECT}, REUSE {D.REUSE}, "
          f"BUFFERED {P.BUFFERED}, PAIR {CL.PAIR}, FLAT {D.FLAT} (planes "
          f"half a vector wide), FLAT_POOLS below {P.FLAT_MAX_VECTORS} vectors", flush=True)
    for flag in args.only.split(","):
        for label, ways in _cases(flag):
            t = {v: [] for v in ways}
            for _ in range(args.rounds):
                for v, (call, _) in ways.items():
                    t0 = time.perf_counter()
                    call()
                    t[v].append(time.perf_counter() - t0)
            same = np.array_equal(ways[False][1], ways[True][1])
            print(f"{flag:8s} {label:36s} off {np.median(t[False]) * 1e3:7.3f} ms   on {np.median(t[True]) * 1e3:7.3f}"
                  f" ms   on/off {np.median(t[True]) / np.median(t[False]):5.2f}   same bits {same}", flush=True)


if __name__ == "__main__":
    main()

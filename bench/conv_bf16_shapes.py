"""ge::ConvBF16 (conv_bf16.py) against ge's float32 conv (IMPLICIT on packed weights) per conv family of
ResNet-50, one thread, kernels called directly (weights packed once, outputs and workspaces made once),
alternating, best of --reps.

    taskset -c 0 python bench/conv_bf16_shapes.py [--reps 20]

GMAC/s is multiply-adds per second: vdpbf16ps does 32 an instruction, a float32 FMA 16.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys

import numpy as np

from ge.bench import compiled_form
from ge.ir.dtypes import BFLOAT16
from ge.kernels import KernelContext, TensorSpec, conv_bf16, lookup
from ge.kernels.registry import run_blocks, writable

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402
from timing import alternating_best  # noqa: E402

# (C, M, H=W, k, stride, pad, residual Z): ResNet-50's conv families, the stem last
SHAPES = [(64, 256, 56, 1, 1, 0, True), (64, 256, 56, 1, 1, 0, False), (256, 64, 56, 1, 1, 0, False),
          (64, 64, 56, 3, 1, 1, False), (128, 512, 28, 1, 1, 0, True), (512, 128, 28, 1, 1, 0, False),
          (128, 128, 28, 3, 1, 1, False), (256, 1024, 14, 1, 1, 0, True), (1024, 256, 14, 1, 1, 0, False),
          (256, 256, 14, 3, 1, 1, False), (512, 512, 7, 3, 1, 1, False), (3, 64, 224, 7, 2, 3, False)]


def _prepared(op, domain, attrs, arrays, out_dtype):
    specs = [TensorSpec(a.shape, a.dtype) for a in arrays]
    ctx = KernelContext(op, "n", attrs, specs, [None] * len(arrays), 13, cores=1)
    launch, out_shape = lookup(op, domain).bind(ctx), lookup(op, domain).infer(ctx)[0].shape
    y = np.empty(out_shape, out_dtype)
    picked = launch.inputs if launch.inputs is not None else range(len(arrays))
    flat = [writable(np.ascontiguousarray(arrays[i]).reshape(-1)) for i in picked]
    ws = [np.empty(w.size, w.dtype) for w in launch.workspaces]
    args = [*[a.view(np.uint16) if a.dtype == BFLOAT16 else a for a in flat], y.reshape(-1).view(
        np.uint16) if out_dtype == BFLOAT16 else y.reshape(-1), *ws, *launch.args]
    return lambda: run_blocks(launch, args)


def fns(C, M, H, k, s, p, z):
    rng = np.random.default_rng(0)
    oh = (H + 2 * p - k) // s + 1
    x = rng.standard_normal((1, C, H, H), np.float32)
    w = (rng.standard_normal((M, C, k, k)) / np.sqrt(C * k * k)).astype(np.float32)
    b = rng.standard_normal(M).astype(np.float32)
    r = rng.standard_normal((1, M, oh, oh)).astype(np.float32)
    attrs = {"strides": [s, s], "pads": [p] * 4, "activation": "Relu"}
    op, arrs, fattrs, dom = compiled_form("Conv", [x, w, b], attrs)
    if op == "Conv":
        op, dom = "FusedConv", "ge"
    f32 = _prepared(op, dom, fattrs, arrs + ([r] if z else []), np.float32)
    wp = np.empty(conv_bf16.packed_size(M, C, k, k), np.uint16)
    conv_bf16.pack_weights(w.astype(BFLOAT16).view(np.uint16).reshape(-1), M, C, k, k, wp)
    battrs = dict(attrs, weight_shape=[M, C, k, k])
    bf = _prepared("ConvBF16", "ge", battrs, [x.astype(BFLOAT16), wp.view(BFLOAT16), b] +
                   ([r.astype(BFLOAT16)] if z else []), BFLOAT16)
    return f32, bf, M * C * k * k * oh * oh


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    print(f"ConvBF16 vs ge's float32 conv, one thread, {datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}; "
          f"best of {a.reps}, alternating")
    print("| conv (C->M, HxW, k, stride, Z) | f32 ms | bf16 ms | f32 / bf16 | bf16 GMAC/s |\n|---|---|---|---|---|")
    for shape in SHAPES:
        f32, bf, macs = fns(*shape)
        t32, tbf = alternating_best([f32, bf], a.reps)
        C, M, H, k, s, p, z = shape
        print(f"| {C}->{M}, {H}x{H}, {k}x{k}, s{s}{', +Z' if z else ''} | {t32 * 1e3:.3f} | {tbf * 1e3:.3f} | "
              f"{t32 / tbf:.2f}x | {macs / tbf / 1e9:.0f} |", flush=True)


if __name__ == "__main__":
    main()

"""The GEMM core against OpenBLAS on one thread, and float32 convs on IMPLICIT vs the GEMM lowerings:

    OPENBLAS_NUM_THREADS=1 python bench/gemm_one_core.py [--rounds 7]

Prints, with the date, the machine and its vector features: GF/s of gemm_nn_ld and of numpy's matmul
(OpenBLAS) on 1024^3, the conv-shaped GEMM 256x3136x576 and ViT-B's two MatMul shapes, best of the rounds
alternating; then ResNet-50's 3x3 64->64 conv on 56x56 compiled both ways in one process (conv.PACK_FLOAT32
on: IMPLICIT on packed weights; off: SHIFTED on the GEMM), best of the rounds, alternating (the same bits).
The quick, compile-light companion of bench/gemm_cores.py.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ge  # noqa: E402
from ge.kernels import conv  # noqa: E402
from ge.kernels.gemm import A_BLOCK_BYTES, L2_BLOCK_BYTES, gemm_nn_ld  # noqa: E402
from ge.kernels.simd import host_has  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402
from timing import alternating_best  # noqa: E402

SHAPES = [(1024, 1024, 1024), (256, 3136, 576), (197, 3072, 768), (197, 768, 3072)]


def conv_model(c: int = 64, m: int = 64, hw: int = 56):
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((m, c, 3, 3)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "conv",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    rounds = p.parse_args(argv).rounds
    print(f"GEMM one core, {datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}, "
          f"avx512f {host_has('avx512f')}, L2 blocks A {A_BLOCK_BYTES >> 10} KiB / B {L2_BLOCK_BYTES >> 10} KiB")
    rng = np.random.default_rng(1)
    for M, N, K in SHAPES:
        a, b = rng.random((M, K), np.float32), rng.random((K, N), np.float32)
        c = np.zeros((M, N), np.float32)
        g, o = alternating_best([lambda: gemm_nn_ld(a.ravel(), b.ravel(), c.ravel(), M, N, K, K, 1, N, N, False),
                                 lambda: a @ b], rounds)
        print(f"{M}x{N}x{K:<6d} ge {2 * M * N * K / g / 1e9:6.1f} GF/s  OpenBLAS {2 * M * N * K / o / 1e9:6.1f}  "
              f"ge/OpenBLAS speed {o / g:.2f}", flush=True)
    model, x = conv_model(), {"x": rng.standard_normal((1, 64, 56, 56)).astype(np.float32)}
    sessions = {}
    for packed in (True, False):
        conv.PACK_FLOAT32 = packed
        sessions[packed] = ge.Session(model, options=ge.Options(thread_budget=1))
    assert np.array_equal(sessions[True].run(None, x)[0], sessions[False].run(None, x)[0])
    packed, lowered = alternating_best([lambda: sessions[True].run(None, x), lambda: sessions[False].run(None, x)],
                                       rounds)
    print(f"conv 3x3 64->64 56x56: IMPLICIT (packed) {packed * 1e3:.2f} ms, GEMM lowering {lowered * 1e3:.2f} ms "
          f"(same bits)")


if __name__ == "__main__":
    main()

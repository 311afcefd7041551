"""The pools of the light models (Inception v2, ShuffleNet, ResNet-50), one node each, ge vs onnxruntime on
one thread:

    python bench/pool_vs_ort.py [--rounds 200]

Prints, with the date and the machine, the medians of ge (runtime_v1, thread budget 1) and onnxruntime (one
intra-op thread) alternating round by round in one process, and the ratio ge / onnxruntime.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys

import numpy as np
from onnx import TensorProto, helper

import ge
from ge.bench import alternate, onnxruntime_session

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402

# op, channels, height = width, window, stride, pads
CASES = [("AveragePool", 192, 28, 3, 1, 1), ("AveragePool", 576, 14, 3, 1, 1), ("AveragePool", 1024, 7, 3, 1, 1),
         ("MaxPool", 1024, 7, 3, 1, 1), ("AveragePool", 1024, 7, 7, 1, 0), ("MaxPool", 64, 112, 3, 2, 1),
         ("AveragePool", 136, 28, 3, 2, 1), ("AveragePool", 272, 14, 3, 2, 1)]


def pool_model(op: str, C: int, HW: int, K: int, S: int, P: int):
    OH = (HW + 2 * P - K) // S + 1
    node = helper.make_node(op, ["x"], ["y"], kernel_shape=[K, K], strides=[S, S], pads=[P] * 4)
    g = helper.make_graph([node], op, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, HW, HW])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, OH, OH])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=200)
    args = p.parse_args(argv)
    print(f"pools vs onnxruntime, one thread each, {datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}")
    for op, C, HW, K, S, P in CASES:
        model = pool_model(op, C, HW, K, S, P)
        sess = ge.Session(model, options=ge.Options(thread_budget=1))
        feeds = {"x": np.random.default_rng(0).standard_normal((1, C, HW, HW)).astype(np.float32)}
        ort = onnxruntime_session(model, 1)
        t = alternate({"ge": lambda: sess.run(None, feeds), "ort": lambda: ort.run(None, feeds)}, rounds=args.rounds)
        g, o = (float(np.median(t[k])) * 1e3 for k in ("ge", "ort"))
        print(f"{op:12s} {K}x{K}/{S} pad {P} on {C:4d} x {HW:3d} x {HW:3d}: ge {g:.3f} ms, onnxruntime {o:.3f} ms, "
              f"ge/ort {g / o:.2f}", flush=True)


if __name__ == "__main__":
    main()

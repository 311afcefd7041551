"""Single nodes of the light models and blocks where ge's rows are short, ge vs onnxruntime on one thread:
pools (Inception v2, ShuffleNet, ResNet-50), depthwise convs (ShuffleNet, MobileNetV2, MBConv) and
Softmax and the MatMuls (ViT-B's attention and MLP, weights as initializers):

    python bench/nodes_vs_ort.py [--rounds 200] [--only pools,depthwise,softmax,matmul]

Prints, with the date and the machine, the medians of ge (runtime_v1, thread budget 1) and onnxruntime (one
intra-op thread) alternating round by round in one process, and the ratio ge / onnxruntime.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.bench import alternate, onnxruntime_session

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402

# op, channels, height = width, window, stride, pads
POOLS = [("AveragePool", 192, 28, 3, 1, 1), ("AveragePool", 576, 14, 3, 1, 1), ("AveragePool", 1024, 7, 3, 1, 1),
         ("MaxPool", 1024, 7, 3, 1, 1), ("AveragePool", 1024, 7, 7, 1, 0), ("MaxPool", 64, 112, 3, 2, 1),
         ("AveragePool", 136, 28, 3, 2, 1), ("AveragePool", 272, 14, 3, 2, 1)]
# channels, height = width, kernel, stride (pads kernel // 2, a bias)
DEPTHWISE = [(112, 56, 3, 2), (136, 28, 3, 1), (136, 28, 3, 2), (272, 14, 3, 1), (272, 14, 3, 2), (544, 7, 3, 1),
             (144, 56, 3, 1), (240, 28, 5, 1)]
SOFTMAX = [(12, 197, 197), (12, 128, 128), (12, 197, 256)]
MATMUL = [(197, 768, 2304), (197, 768, 768), (197, 768, 3072), (197, 3072, 768)]   # M, K, N


def _model(node, x_shape, y_shape, initializers=()):
    g = helper.make_graph([node], node.op_type, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def pool_model(op: str, C: int, HW: int, K: int, S: int, P: int):
    OH = (HW + 2 * P - K) // S + 1
    node = helper.make_node(op, ["x"], ["y"], kernel_shape=[K, K], strides=[S, S], pads=[P] * 4)
    return _model(node, [1, C, HW, HW], [1, C, OH, OH])


def depthwise_model(C: int, HW: int, K: int, S: int):
    OH = (HW + 2 * (K // 2) - K) // S + 1
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((C, 1, K, K)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(C).astype(np.float32), "b")
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[K, K], strides=[S, S],
                            pads=[K // 2] * 4, group=C)
    return _model(node, [1, C, HW, HW], [1, C, OH, OH], (w, b))


def softmax_model(shape):
    return _model(helper.make_node("Softmax", ["x"], ["y"], axis=-1), list(shape), list(shape))


def matmul_model(M: int, K: int, N: int):
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((K, N)).astype(np.float32), "w")
    return _model(helper.make_node("MatMul", ["x", "w"], ["y"]), [M, K], [M, N], (w,))


def cases():
    """{section: [(label, model)]}."""
    return {
        "pools": [(f"{op:12s} {K}x{K}/{S} pad {P} on {C:4d} x {HW:3d} x {HW:3d}", pool_model(op, C, HW, K, S, P))
                  for op, C, HW, K, S, P in POOLS],
        "depthwise": [(f"depthwise {K}x{K}/{S} on {C:4d} x {HW:3d} x {HW:3d}", depthwise_model(C, HW, K, S))
                      for C, HW, K, S in DEPTHWISE],
        "softmax": [(f"Softmax over the last axis of {'x'.join(map(str, s))}", softmax_model(s)) for s in SOFTMAX],
        "matmul": [(f"MatMul {M} x {K} @ {K} x {N}", matmul_model(M, K, N)) for M, K, N in MATMUL],
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--only", default="pools,depthwise,softmax,matmul", help="comma-separated sections")
    args = p.parse_args(argv)
    print(f"single nodes vs onnxruntime, one thread each, {datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}")
    every = cases()
    for section in args.only.split(","):
        for label, model in every[section]:
            sess = ge.Session(model, options=ge.Options(thread_budget=1))
            shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
            feeds = {"x": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
            ort = onnxruntime_session(model, 1)
            t = alternate({"ge": lambda: sess.run(None, feeds), "ort": lambda: ort.run(None, feeds)},
                          rounds=args.rounds)
            g, o = (float(np.median(t[k])) * 1e3 for k in ("ge", "ort"))
            print(f"{label}: ge {g:.3f} ms, onnxruntime {o:.3f} ms, ge/ort {g / o:.2f}", flush=True)


if __name__ == "__main__":
    main()

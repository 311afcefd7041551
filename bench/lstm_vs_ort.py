"""An LSTM layer, ge vs onnxruntime, one thread each (issue 19's target: within 1.2x of onnxruntime):

    python bench/lstm_vs_ort.py [--rounds N] [--seq 64] [--batch 8] [--hidden 256] [--input 256] [--op LSTM]

ge runs the model on runtime_v1 with a thread budget of 1; onnxruntime with one intra-op thread; the two
alternate round by round in one process; prints the medians and the ratio ge / onnxruntime, and the work
(multiply-adds of the input projection and of the recurrence).
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

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def recurrent_model(op: str, T: int, B: int, I: int, H: int, directions: int = 1):
    rng = np.random.default_rng(0)
    G, D = GATES[op], directions

    def w(*shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32))

    inits = [w(D, G * H, I), w(D, G * H, H), w(D, 2 * G * H)]
    for t, name in zip(inits, "WRB"):
        t.name = name
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, ["X", "W", "R", "B"], outs, hidden_size=H,
                            direction="bidirectional" if D == 2 else "forward")
    graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, B, I])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--input", type=int, default=256)
    p.add_argument("--op", default="LSTM", choices=sorted(GATES))
    p.add_argument("--directions", type=int, default=1, choices=(1, 2))
    a = p.parse_args(argv)
    model = recurrent_model(a.op, a.seq, a.batch, a.input, a.hidden, a.directions)
    feeds = {"X": np.random.default_rng(1).standard_normal((a.seq, a.batch, a.input)).astype(np.float32)}
    sess = ge.Session(model, runtime="v1", options=ge.Options(thread_budget=1))
    ort = onnxruntime_session(model, 1)
    got, want = sess.run(None, feeds), ort.run(None, feeds)
    err = max(float(np.abs(g - w).max()) for g, w in zip(got, want))
    t = alternate({"ge": lambda: sess.run(None, feeds), "ort": lambda: ort.run(None, feeds)}, rounds=a.rounds)
    g, o = (float(np.median(t[k])) * 1e3 for k in ("ge", "ort"))
    macs = a.directions * a.seq * a.batch * GATES[a.op] * a.hidden * (a.input + a.hidden)
    print(f"{a.op} seq {a.seq} batch {a.batch} input {a.input} hidden {a.hidden} directions {a.directions} "
          f"({macs / 1e6:.0f} M multiply-adds), one thread each, {datetime.datetime.now():%Y-%m-%d %H:%M}, "
          f"{machine()}")
    print(f"ge {g:.3f} ms   onnxruntime {o:.3f} ms   ge/ort {g / o:.2f}   max |ge - ort| {err:.2e}")


if __name__ == "__main__":
    main()

"""The onnxruntime drop-in's cost per run: ge.ort.InferenceSession.run against ge.Session.run.

    python bench/ort_dropin.py [--rounds N] [--calls N]

Both sides run the same compiled session (InferenceSession.session is the ge.Session), so the difference is
the drop-in's own work per run (feeds checked for non-arrays, run options, output names). Each sample is
`--calls` runs in a row; samples alternate between the sides in a shuffled order each round (ge.bench.alternate).
Prints the date, the machine and the commit, then per model the median per run on each side and the ratio.
Models: a tiny Add+Relu (where any per-run cost shows most), a scikit-learn export (logreg_iris: host ONNX-ML
ops on runtime_v2, tests/fixtures/sklearn) and two light models (squeezenet, resnet50); `--models` picks some.
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper

import ge.ort
from ge.bench import alternate
from ge.zoo import light_model_path

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402


def tiny() -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["t"]), helper.make_node("Relu", ["t"], ["z"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


MODELS = {"tiny": tiny,
          "logreg_iris": lambda: os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "sklearn",
                                              "logreg_iris.onnx"),
          "squeezenet": lambda: light_model_path("squeezenet"), "resnet50": lambda: light_model_path("resnet50")}


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(__file__), check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--calls", type=int, default=0, help="runs per sample (default: 200 tiny, 5 light models)")
    p.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    args = p.parse_args(argv)
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; {machine()}; commit {commit()}")
    print(f"{'model':<12} {'ge.Session.run':>16} {'InferenceSession.run':>22} {'ratio':>7}  "
          "spread (p25-p75 of round ratios)   best: ge / drop-in / ratio")
    for name in args.models:
        isess = ge.ort.InferenceSession(MODELS[name]())
        sess = isess.session
        rng = np.random.default_rng(0)
        feeds = {a.name: rng.standard_normal([d if isinstance(d, int) else 4 for d in a.shape]).astype(a.dtype)
                 for a in sess.get_inputs()}
        calls = args.calls or (200 if name in ("tiny", "logreg_iris") else 5)

        def base():
            for _ in range(calls):
                sess.run(None, feeds)

        def dropin():
            for _ in range(calls):
                isess.run(None, feeds)
        times = alternate({"ge": base, "ort": dropin}, rounds=args.rounds)
        ge_t, ort_t = times["ge"] / calls, times["ort"] / calls
        ratios = ort_t / ge_t
        print(f"{name:<12} {np.median(ge_t) * 1e6:>13.1f} us {np.median(ort_t) * 1e6:>19.1f} us "
              f"{np.median(ort_t) / np.median(ge_t):>7.3f}  {np.percentile(ratios, 25):.3f}-"
              f"{np.percentile(ratios, 75):.3f}{'':>19}{ge_t.min() * 1e6:.1f} / {ort_t.min() * 1e6:.1f} us / "
              f"{ort_t.min() / ge_t.min():.3f}")
        isess.close()


if __name__ == "__main__":
    main()

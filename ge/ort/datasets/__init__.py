"""onnxruntime.datasets: the example models its documentation loads (written by tools/make_ort_datasets.py):
mul_1.onnx, sigmoid.onnx and logreg_iris.onnx (ONNX-ML ops with a sequence of maps out)."""
from __future__ import annotations

import os

EXAMPLES = ("logreg_iris.onnx", "mul_1.onnx", "sigmoid.onnx")


def get_example(name: str) -> str:
    """The absolute file name of example `name`; FileNotFoundError (as onnxruntime's) when there is none."""
    full = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    if not os.path.exists(full):
        raise FileNotFoundError(f"Unable to find example '{name}'; ge's examples: {', '.join(EXAMPLES)}")
    return full

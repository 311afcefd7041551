"""onnxruntime.datasets: the example models its documentation loads (written by tools/make_ort_datasets.py).
logreg_iris.onnx (a scikit-learn export of ONNX-ML ops with map outputs) is not among them yet."""
from __future__ import annotations

import os

EXAMPLES = ("mul_1.onnx", "sigmoid.onnx")


def get_example(name: str) -> str:
    """The absolute file name of example `name`; FileNotFoundError (as onnxruntime's) when there is none."""
    full = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    if not os.path.exists(full):
        raise FileNotFoundError(f"Unable to find example '{name}'; ge's examples: {', '.join(EXAMPLES)}")
    return full

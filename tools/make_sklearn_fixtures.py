"""Export scikit-learn models to ONNX as users do (skl2onnx), for tests of the ONNX-ML ops and string tensors
(run by hand in a venv with scikit-learn and skl2onnx; CI has neither, the small .onnx files are committed):

    pip install scikit-learn skl2onnx
    python tools/make_sklearn_fixtures.py [--out tests/fixtures/sklearn]

Iris (150 rows, 4 features) fits every model (seed 0); exports at opset 17 / ai.onnx.ml 3, the batch dim
symbolic. tests/ort/test_ml.py runs each against onnxruntime and ge.ort on seeded feeds.
"""
from __future__ import annotations

import argparse
import os

import numpy as np
from skl2onnx import to_onnx
from sklearn.datasets import load_iris
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, OneHotEncoder, StandardScaler
from sklearn.svm import SVC, SVR
from sklearn.tree import DecisionTreeClassifier


def models():
    x, y = load_iris(return_X_y=True)
    x = x.astype(np.float32)
    holes = x.copy()
    holes[::7, 1] = np.nan
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    cats = np.array([["a", "x"], ["b", "y"], ["c", "x"], ["a", "z"]] * 5, dtype=object)
    yield "logreg_iris", LogisticRegression(max_iter=500).fit(x, y), x
    yield "logreg_binary", LogisticRegression(max_iter=500).fit(x, y > 0), x
    yield "logreg_string_labels", LogisticRegression(max_iter=500).fit(x, names), x
    yield "tree_iris", DecisionTreeClassifier(max_depth=4, random_state=0).fit(x, y), x
    yield "tree_string_labels", DecisionTreeClassifier(max_depth=3, random_state=0).fit(x, names), x
    yield "forest_iris", RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0).fit(x, y), x
    yield "gbt_binary", GradientBoostingClassifier(n_estimators=5, max_depth=3, random_state=0).fit(x, y == 1), x
    yield "forest_regressor", RandomForestRegressor(n_estimators=4, max_depth=4, random_state=0).fit(
        x[:, :3], x[:, 3]), x[:, :3]
    yield "linreg", LinearRegression().fit(x[:, :3], x[:, 3]), x[:, :3]
    yield "pipeline_impute_scale_logreg", make_pipeline(SimpleImputer(), StandardScaler(), Normalizer(),
                                                        LogisticRegression(max_iter=500)).fit(holes, y), holes
    yield "onehot_strings", OneHotEncoder(handle_unknown="ignore").fit(cats), cats
    yield "svc_iris", SVC(kernel="rbf").fit(x, y), x   # one-vs-one scores, then skl2onnx's ovr graph
    yield "svc_poly_binary", SVC(kernel="poly", degree=2).fit(x, y > 0), x
    yield "svr_rbf", SVR(kernel="rbf").fit(x[:, :3], x[:, 3]), x[:, :3]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures/sklearn")
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    for name, model, x in models():
        onx = to_onnx(model, x[:1], target_opset={"": 17, "ai.onnx.ml": 3})
        with open(os.path.join(out, f"{name}.onnx"), "wb") as f:
            f.write(onx.SerializeToString())
        print(name, onx.ByteSize(), "bytes")


if __name__ == "__main__":
    main()

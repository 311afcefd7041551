"""Before/Expected helpers for pass tests: build a small ONNX model, run one pass, compare the printed nodes;
check that the whole pipeline (with the pass on and off) matches onnx.reference on the same model.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ge
from ge.compiler import import_model
from ge.ir import format_node, verify
from ge.passes import fold_constants, infer_shapes

rng = np.random.default_rng(0)


def randn(*shape, positive=False) -> np.ndarray:
    a = rng.standard_normal(shape).astype(np.float32)
    return np.abs(a) + 0.5 if positive else a


def model(nodes, inputs: dict, outputs: list[str], inits: dict | None = None, opset=17) -> onnx.ModelProto:
    """A model from helper nodes, {input name: shape} (float32), output names and {name: array}."""
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def node(op, ins, outs, name=None, **attrs):
    return helper.make_node(op, ins, outs, name=name or outs[0], **attrs)


def run_pass(m, pass_fn, fold=False):
    """Import `m`, infer shapes (and fold constants), run `pass_fn`; (graph, changed). Verifies the result."""
    g = import_model(m)
    infer_shapes(g)
    if fold:
        fold_constants(g)
    changed = pass_fn(g)
    verify(g)
    return g, changed


def printed(g) -> list[str]:
    """The graph's nodes in the one printed form, one line each."""
    return [format_node(n) for n in g.nodes]


def ops(g) -> list[str]:
    return [f"{n.domain}::{n.op_type}" if n.domain else n.op_type for n in g.nodes]


def check_numerics(m, feeds: dict, disabled=(), rtol=1e-4, atol=1e-5) -> list[np.ndarray]:
    """ge.Session (runtime v2, `disabled` passes off) against onnx.reference on model `m`."""
    want = ReferenceEvaluator(m).run(None, feeds)
    sess = ge.Session(m, runtime="v2", options=ge.Options(disabled_passes=tuple(disabled), verify_passes=True))
    got = sess.run(None, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return got

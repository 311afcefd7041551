"""Ops ge runs as ONNX functions (kernels/expanded.py, frontends/onnx_functions.py): inlined at import,
in bodies too, typed errors for what a function cannot be built for; the optimizers' first step."""
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import ge
from ge.kernels import is_registered, lookup
from ge.kernels.registry import _EXPANDED
from ge.frontends.onnx_builders import BUILDERS

F = TensorProto.FLOAT


def test_every_expanded_op_has_a_function():
    import onnx
    for (op, domain), since in _EXPANDED.items():
        assert is_registered(op, domain)
        if (op, domain) in BUILDERS:
            continue
        s = onnx.defs.get_schema(op, max(since, 1) if domain else 10 ** 3, domain)
        assert s.has_function or s.has_context_dependent_function, op


def test_an_expanded_op_met_outside_the_onnx_importer_says_why():
    with pytest.raises(ge.UnsupportedOpError, match="as its ONNX function"):
        lookup("SwiGLU", "", 28, "n")


def _swiglu_in_if():
    """If(c) then SwiGLU(a, b) else a: the function is inlined into the branch."""
    a, b = (helper.make_tensor_value_info(n, F, [2, 4]) for n in "ab")
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    yt, ye = (helper.make_tensor_value_info(n, F, [2, 4]) for n in ("yt", "ye"))
    then = helper.make_graph([helper.make_node("SwiGLU", ["a", "b"], ["yt"], alpha=0.5)], "then", [], [yt])
    other = helper.make_graph([helper.make_node("Identity", ["a"], ["ye"])], "else", [], [ye])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    y = helper.make_tensor_value_info("y", F, [2, 4])
    return helper.make_model(helper.make_graph([node], "g", [a, b, c], [y]),
                             opset_imports=[helper.make_opsetid("", 28)])


def test_expanded_op_in_a_body():
    m = _swiglu_in_if()
    rng = np.random.default_rng(0)
    feeds = {"a": rng.standard_normal((2, 4), np.float32), "b": rng.standard_normal((2, 4), np.float32)}
    for c in (True, False):
        feeds["c"] = np.array(c)
        want = ReferenceEvaluator(m).run(None, feeds)[0]
        np.testing.assert_allclose(ge.Session(m).run(None, feeds)[0], want, rtol=1e-5, atol=1e-6)


def _adam(t):
    names = ["R", "T", "X", "G", "V", "H"]
    ins = [helper.make_tensor_value_info(n, TensorProto.INT64 if n == "T" else F, [] if n in "RT" else [3])
           for n in names]
    outs = [helper.make_tensor_value_info(n, F, None) for n in ("X_new", "V_new", "H_new")]
    node = helper.make_node("Adam", names, [o.name for o in outs], domain="ai.onnx.preview.training",
                            alpha=0.9, beta=0.99, epsilon=1e-3, norm_coefficient=0.01, norm_coefficient_post=0.1)
    m = helper.make_model(helper.make_graph([node], "g", ins, outs), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.preview.training", 1)])
    rng = np.random.default_rng(t)
    feeds = {n: rng.random(3, np.float32) for n in "XGVH"}
    feeds.update(R=np.array(0.1, np.float32), T=np.array(t, np.int64))
    return m, feeds


@pytest.mark.parametrize("t", [0, 3])
def test_adam_first_and_later_steps(t):
    """t = 0 takes the rate as it is, later steps the bias-corrected one (the node cases have t > 0)."""
    m, feeds = _adam(t)
    from onnx.reference.ops.aionnx_preview_training.op_adam import _apply_adam
    want = _apply_adam(feeds["R"], feeds["T"], feeds["X"], feeds["G"], feeds["V"], feeds["H"], 0.01, 0.1, 0.9,
                       0.99, 1e-3)
    for g, w in zip(ge.Session(m).run(None, feeds), want):
        np.testing.assert_allclose(g, w, rtol=1e-5)


def test_tensor_scatter_on_the_batch_axis_is_a_load_error():
    cache = helper.make_tensor_value_info("c", F, [2, 4, 5])
    upd = helper.make_tensor_value_info("u", F, [1, 4, 5])
    y = helper.make_tensor_value_info("y", F, None)
    node = helper.make_node("TensorScatter", ["c", "u"], ["y"], axis=0)
    m = helper.make_model(helper.make_graph([node], "g", [cache, upd], [y]),
                          opset_imports=[helper.make_opsetid("", 24)])
    with pytest.raises(ge.ModelLoadError, match="sequence axis after the batch axis"):
        ge.Session(m)

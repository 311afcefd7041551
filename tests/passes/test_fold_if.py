"""fold_if: an If on a constant condition becomes its branch (Before/Expected, numerics, runtime_v1)."""
import numpy as np
from onnx import TensorProto, helper
from pass_check import check_numerics, model, node, printed, randn, run_pass

import ge
from ge.passes import fold_if


def _if(cond: bool):
    then = helper.make_graph([node("Mul", ["x", "w"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])])
    other = helper.make_graph([node("Neg", ["x"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 3])])
    return model([node("If", ["c"], ["y"], name="pick", then_branch=then, else_branch=other)], {"x": [2, 3]},
                 ["y"], {"c": np.array(cond), "w": np.full((2, 3), 2, np.float32)})


def test_constant_if_becomes_the_branch_it_picks():
    g, changed = run_pass(_if(True), fold_if)
    assert changed
    assert printed(g) == ["%pick/t:f32[2,3] = Mul(%x, %w)  # pick/t",
                          "%y:f32[2,3] = Identity(%pick/t)  # pick/out"]
    g, _ = run_pass(_if(False), fold_if)
    assert printed(g)[0] == "%pick/e:f32[2,3] = Neg(%x)  # pick/e"
    for cond in (True, False):
        check_numerics(_if(cond), {"x": randn(2, 3)})


def test_a_constant_if_runs_on_runtime_v1():
    x = randn(2, 3)
    s = ge.Session(_if(True), runtime="v1")
    np.testing.assert_allclose(s.run(None, {"x": x})[0], x * 2)


def test_data_dependent_if_is_left_alone():
    m = _if(True)
    m.graph.initializer.pop(0)           # c becomes a feed
    m.graph.input.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    assert not run_pass(m, fold_if)[1]

"""cancel_transposes: Before/Expected on small graphs, and numerics against onnx.reference."""
from pass_check import check_numerics, model, node, ops, printed, randn, run_pass

from ge.passes import cancel_transposes

X = {"x": [1, 2, 3, 4]}
TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]


def test_inverse_pair_is_removed():
    m = model([node("Transpose", ["x"], ["a"], perm=TO_NHWC), node("Transpose", ["a"], ["b"], perm=TO_NCHW),
               node("Relu", ["b"], ["y"])], X, ["y"])
    g, changed = run_pass(m, cancel_transposes)
    assert changed
    assert printed(g) == ["%y:f32[1,2,3,4] = Relu(%x)  # y"]
    check_numerics(m, {"x": randn(1, 2, 3, 4)})


def test_other_pairs_merge_into_one_transpose():
    m = model([node("Transpose", ["x"], ["a"], perm=TO_NHWC), node("Transpose", ["a"], ["y"], perm=[0, 2, 1, 3])],
              X, ["y"])
    g, _ = run_pass(m, cancel_transposes)
    assert printed(g) == ["%y:f32[1,4,3,2] = Transpose[perm=[0,3,2,1]](%x)  # y"]
    check_numerics(m, {"x": randn(1, 2, 3, 4)})


def test_first_transpose_kept_while_read_elsewhere():
    m = model([node("Transpose", ["x"], ["a"], perm=TO_NHWC), node("Transpose", ["a"], ["b"], perm=TO_NCHW),
               node("Relu", ["b"], ["y"]), node("Relu", ["a"], ["z"])], X, ["y", "z"])
    g, _ = run_pass(m, cancel_transposes)
    assert ops(g) == ["Transpose", "Relu", "Relu"]
    check_numerics(m, {"x": randn(1, 2, 3, 4)})


def test_identity_pair_on_a_graph_output_keeps_its_name():
    m = model([node("Relu", ["x"], ["r"]), node("Transpose", ["r"], ["a"], perm=TO_NHWC),
               node("Transpose", ["a"], ["y"], perm=TO_NCHW)], X, ["y"])
    g, _ = run_pass(m, cancel_transposes)
    assert ops(g) == ["Relu", "Identity"]
    assert [v.name for v in g.outputs] == ["y"]
    check_numerics(m, {"x": randn(1, 2, 3, 4)})


def test_identity_perm_alone_is_removed_and_others_stay():
    m = model([node("Transpose", ["x"], ["a"], perm=[0, 1, 2, 3]), node("Transpose", ["a"], ["y"], perm=TO_NHWC)],
              X, ["y"])
    g, _ = run_pass(m, cancel_transposes)
    assert printed(g) == ["%y:f32[1,3,4,2] = Transpose[perm=[0,2,3,1]](%x)  # y"]
    lone = model([node("Transpose", ["x"], ["y"], perm=TO_NHWC)], X, ["y"])
    assert not run_pass(lone, cancel_transposes)[1]

"""remove_identity: Before/Expected on small graphs, and numerics against onnx.reference."""
import numpy as np
from pass_check import check_numerics, model, node, ops, printed, randn, run_pass

import ge
from ge.passes import remove_identity

X = {"x": [2, 3]}


def test_identity_inside_the_graph_is_removed():
    m = model([node("Relu", ["x"], ["a"]), node("Identity", ["a"], ["b"]), node("Relu", ["b"], ["y"])],
              X, ["y"])
    g, changed = run_pass(m, remove_identity)
    assert changed
    assert printed(g) == ["%a:f32[2,3] = Relu(%x)  # a", "%y:f32[2,3] = Relu(%a)  # y"]
    check_numerics(m, {"x": randn(2, 3)})


def test_inference_dropout_is_removed_with_unused_mask():
    m = model([node("Relu", ["x"], ["a"]), node("Dropout", ["a"], ["b", "mask"], ratio=0.5),
               node("Relu", ["b"], ["y"])], X, ["y"], opset=11)
    g, _ = run_pass(m, remove_identity)
    assert printed(g) == ["%a:f32[2,3] = Relu(%x)  # a", "%y:f32[2,3] = Relu(%a)  # y"]
    assert "mask" not in g.values
    check_numerics(m, {"x": randn(2, 3)})


def test_dropout_with_constant_false_training_mode_is_removed():
    m = model([node("Relu", ["x"], ["a"]), node("Dropout", ["a", "r", "t"], ["b"]), node("Relu", ["b"], ["y"])],
              X, ["y"], {"r": np.array(0.5, np.float32), "t": np.array(False)})
    g, _ = run_pass(m, remove_identity)
    assert ops(g) == ["Relu", "Relu"]


def test_dropout_kept_when_training_or_mask_is_read():
    training = model([node("Dropout", ["x", "r", "t"], ["y"])], X, ["y"],
                     {"r": np.array(0.5, np.float32), "t": np.array(True)})
    assert not run_pass(training, remove_identity)[1]
    mask_out = model([node("Dropout", ["x"], ["y", "mask"])], X, ["y", "mask"])
    assert not run_pass(mask_out, remove_identity)[1]
    mask_read = model([node("Dropout", ["x"], ["d", "mask"]), node("Shape", ["mask"], ["y"])], X, ["y"])
    assert not run_pass(mask_read, remove_identity)[1]


def test_identity_at_graph_output_renames_its_producer_output():
    # Before: %a = Relu(%x); %y = Identity(%a); return %y     Expected: %y = Relu(%x); return %y
    m = model([node("Relu", ["x"], ["a"], name="relu"), node("Identity", ["a"], ["y"])], X, ["y"])
    g, changed = run_pass(m, remove_identity)
    assert changed
    assert printed(g) == ["%y:f32[2,3] = Relu(%x)  # relu"]
    assert [v.name for v in g.outputs] == ["y"] and "a" not in g.values
    check_numerics(m, {"x": randn(2, 3)})


def test_identity_kept_when_output_would_alias_an_input_or_rename():
    feed_to_output = model([node("Identity", ["x"], ["y"])], X, ["y"])
    const_to_output = model([node("Identity", ["c"], ["y"])], {}, ["y"], {"c": randn(2, 3)})
    shared = model([node("Relu", ["x"], ["a"]), node("Identity", ["a"], ["y"]), node("Transpose", ["a"], ["z"])],
                   X, ["y", "z"])
    two_outputs = model([node("Relu", ["x"], ["a"]), node("Identity", ["a"], ["y"])], X, ["a", "y"])
    for m in (feed_to_output, const_to_output, shared, two_outputs):
        g, changed = run_pass(m, remove_identity)
        assert not changed and "Identity" in ops(g)
        assert [v.name for v in g.outputs] == [o.name for o in m.graph.output]


def test_identity_of_an_input_still_returns_a_copy():
    m = model([node("Identity", ["x"], ["y"])], X, ["y"])
    x = randn(2, 3)
    y, = check_numerics(m, {"x": x})
    assert not np.shares_memory(x, y)


def test_identity_on_a_graph_output_value_keeps_both_outputs():
    m = model([node("Relu", ["x"], ["a"]), node("Identity", ["a"], ["b"]), node("Transpose", ["b"], ["z"])],
              X, ["a", "z"])
    g, _ = run_pass(m, remove_identity)
    assert ops(g) == ["Relu", "Transpose"] and [v.name for v in g.outputs] == ["a", "z"]
    check_numerics(m, {"x": randn(2, 3)})


def test_switch_off_by_name():
    m = model([node("Relu", ["x"], ["a"]), node("Identity", ["a"], ["y"])], X, ["y"])
    check_numerics(m, {"x": randn(2, 3)}, disabled=["remove_identity"])
    plan = ge.compile(m, ge.Options(disabled_passes=("remove_identity",)))
    assert [n.op_type for n in plan.nodes] == ["Relu", "Identity"]

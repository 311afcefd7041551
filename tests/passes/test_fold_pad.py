"""fold_pad: Before/Expected on small graphs, and numerics against onnx.reference (pass on and off)."""
import numpy as np
from pass_check import check_numerics, model, node, ops, printed, randn, run_pass

from ge.passes import cancel_transposes, eliminate_dead_code, fold_pad

X = {"x": [1, 4, 7, 7]}
W3, DW = randn(4, 4, 3, 3), randn(4, 1, 3, 3)


def _pad_conv(pads, conv_attrs, value=None, mode="constant", w=W3):
    inits = {"pads": np.array(pads, np.int64), "w": w}
    ins = ["x", "pads"]
    if value is not None:
        inits["v"], ins = np.array(value, np.float32), ins + ["v"]
    return model([node("Pad", ins, ["p"], mode=mode), node("Conv", ["p", "w"], ["y"], **conv_attrs)],
                 X, ["y"], inits)


def test_keras_zero_padding_before_a_valid_stride2_depthwise_conv():
    m = _pad_conv([0, 0, 0, 0, 0, 0, 1, 1], {"group": 4, "strides": [2, 2], "auto_pad": "VALID"}, w=DW)
    g, changed = run_pass(m, fold_pad)
    assert changed
    assert printed(g) == ["%y:f32[1,4,3,3] = Conv[group=4,pads=[0,0,1,1],strides=[2,2]](%x, %w)  # y"]
    x = {"x": randn(1, 4, 7, 7)}
    assert np.array_equal(check_numerics(m, x)[0], check_numerics(m, x, disabled=["fold_pad"])[0])


def test_pads_add_to_the_convs_own_and_an_explicit_zero_value_folds():
    m = _pad_conv([0, 0, 1, 2, 0, 0, 0, 1], {"pads": [1, 0, 1, 1]}, value=0.0)
    g, _ = run_pass(m, fold_pad)
    assert printed(g) == ["%y:f32[1,4,8,9] = Conv[pads=[2,2,1,2]](%x, %w)  # y"]
    check_numerics(m, {"x": randn(1, 4, 7, 7)})


def test_other_pads_stay():
    cases = [_pad_conv([0, 0, 1, 1, 0, 0, 1, 1], {}, value=1.0),          # not zero
             _pad_conv([0, 0, 1, 1, 0, 0, 1, 1], {}, mode="reflect"),
             _pad_conv([0, 1, 1, 1, 0, 0, 1, 1], {}, w=randn(4, 5, 3, 3)),  # the channel axis
             _pad_conv([0, 0, -1, 0, 0, 0, 1, 1], {}),                      # a crop
             _pad_conv([0, 0, 1, 1, 0, 0, 1, 1], {"auto_pad": "SAME_UPPER"})]
    for m in cases:
        g, changed = run_pass(m, fold_pad)
        assert not changed and ops(g) == ["Pad", "Conv"]
    check_numerics(cases[0], {"x": randn(1, 4, 7, 7)})


def test_a_pad_read_elsewhere_stays_for_its_other_reader():
    m = model([node("Pad", ["x", "pads"], ["p"]), node("Conv", ["p", "w"], ["y"]), node("Relu", ["p"], ["z"])],
              X, ["y", "z"], {"pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "w": W3})
    g, changed = run_pass(m, fold_pad)
    assert changed and ops(g) == ["Pad", "Conv", "Relu"] and g.nodes[1].inputs[0].name == "x"
    check_numerics(m, {"x": randn(1, 4, 7, 7)})


def _relu_pad_pool(pads, pool_attrs, act="Relu"):
    return model([node(act, ["x"], ["r"]), node("Pad", ["r", "pads"], ["p"]),
                  node("MaxPool", ["p"], ["y"], kernel_shape=[3, 3], strides=[2, 2], **pool_attrs)],
                 X, ["y"], {"pads": np.array(pads, np.int64)})


def test_keras_zero_padding_before_a_maxpool_over_a_relu():
    m = _relu_pad_pool([0, 0, 1, 1, 0, 0, 1, 1], {})
    g, changed = run_pass(m, fold_pad)
    assert changed and printed(g)[1] == \
        "%y:f32[1,4,4,4] = MaxPool[kernel_shape=[3,3],pads=[1,1,1,1],strides=[2,2]](%r)  # y"
    x = {"x": randn(1, 4, 7, 7)}
    assert np.array_equal(check_numerics(m, x)[0], check_numerics(m, x, disabled=["fold_pad"])[0])


def test_a_maxpool_keeps_its_pad_where_zeros_could_win():
    for m in (_relu_pad_pool([0, 0, 1, 1, 0, 0, 1, 1], {}, act="Tanh"),      # a tanh < 0 loses to a zero
              _relu_pad_pool([0, 0, 3, 0, 0, 0, 0, 0], {}),                  # a window of pads alone
              _relu_pad_pool([0, 0, 1, 1, 0, 0, 1, 1], {"ceil_mode": 1})):
        g, changed = run_pass(m, fold_pad)
        assert not changed and "Pad" in ops(g)


def test_an_nhwc_input_padded_before_its_transpose():
    """ge's TensorFlow frontend pads a Keras model's NHWC input, then transposes it for the stem conv."""
    m = model([node("Pad", ["x", "pads"], ["p"]), node("Transpose", ["p"], ["t"], perm=[0, 3, 1, 2]),
               node("Conv", ["t", "w"], ["y"], strides=[2, 2])], {"x": [1, 7, 7, 4]}, ["y"],
              {"pads": np.array([0, 3, 3, 0, 0, 3, 3, 0], np.int64), "w": W3})
    g, changed = run_pass(m, fold_pad)
    assert changed and printed(g) == [
        "%t:f32[1,4,7,7] = Transpose[perm=[0,3,1,2]](%x)  # t",
        "%y:f32[1,4,6,6] = Conv[pads=[3,3,3,3],strides=[2,2]](%t, %w)  # y"]
    check_numerics(m, {"x": randn(1, 7, 7, 4)})


def test_a_pad_between_transposes_folds_and_the_transposes_cancel():
    """An NHWC Pad left between two Transposes (an export without tf2onnx's transpose optimizer)."""
    m = model([node("Transpose", ["x"], ["a"], perm=[0, 2, 3, 1]), node("Pad", ["a", "pads"], ["p"]),
               node("Transpose", ["p"], ["t"], perm=[0, 3, 1, 2]), node("Conv", ["t", "w"], ["y"])], X, ["y"],
              {"pads": np.array([0, 1, 1, 0, 0, 1, 1, 0], np.int64), "w": W3})
    g, changed = run_pass(m, fold_pad)
    assert changed and cancel_transposes(g)
    eliminate_dead_code(g)
    assert printed(g) == ["%y:f32[1,4,7,7] = Conv[pads=[1,1,1,1]](%x, %w)  # y"]

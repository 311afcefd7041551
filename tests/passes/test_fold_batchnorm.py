"""fold_batchnorm: Before/Expected on small graphs, and numerics against onnx.reference."""
import numpy as np
from pass_check import check_numerics, model, node, ops, printed, randn, run_pass

from ge.passes import fold_batchnorm

X = {"x": [1, 3, 8, 8]}


def bn_inits(prefix="", c=4):
    return {f"{prefix}s": randn(c), f"{prefix}b": randn(c), f"{prefix}m": randn(c),
            f"{prefix}v": randn(c, positive=True)}


def conv_bn(bias=True, extra=(), outputs=("y",), opset=17):
    """x -> Conv(w[, cb]) -> BatchNormalization -> extra nodes."""
    inits = {"w": randn(4, 3, 3, 3), **bn_inits()}
    if bias:
        inits["cb"] = randn(4)
    nodes = [node("Conv", ["x", "w"] + (["cb"] if bias else []), ["c"], name="conv", pads=[1, 1, 1, 1]),
             node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], epsilon=1e-3)] + list(extra)
    return model(nodes, X, list(outputs), inits, opset=opset)


def test_conv_bn_folds_into_one_conv():
    m = conv_bn(outputs=["bn"])
    g, changed = run_pass(m, fold_batchnorm)
    assert changed
    # the Conv takes the BN output's name; its weights are new constants
    assert printed(g) == ["%bn:f32[1,4,8,8] = Conv[pads=[1,1,1,1]](%x, %w_folded, %conv_B_folded)  # conv"]
    check_numerics(m, {"x": randn(1, 3, 8, 8)}, rtol=1e-4, atol=1e-4)
    check_numerics(m, {"x": randn(1, 3, 8, 8)}, disabled=["fold_batchnorm"])


def test_conv_bn_mul_add_from_unsqueezed_constants_fold_into_one_conv():
    # DenseNet / Inception-v2: BN, then Mul and Add by Unsqueeze(per-channel constant, axes [1, 2])
    # (opset 17: onnx.reference's BatchNormalization-9 uses batch statistics once momentum is set)
    extra = [node("Unsqueeze", ["sc", "axes"], ["sc3"]), node("Mul", ["bn", "sc3"], ["mul"]),
             node("Unsqueeze", ["sh", "axes"], ["sh3"]), node("Add", ["sh3", "mul"], ["add"]),
             node("Relu", ["add"], ["y"])]
    m = conv_bn(bias=False, extra=extra)
    more = {"sc": randn(4), "sh": randn(4), "axes": np.array([1, 2], np.int64)}
    m.graph.initializer.extend(model([], {}, [], more).graph.initializer)
    g, _ = run_pass(m, fold_batchnorm, fold=True)
    assert ops(g) == ["Conv", "Relu"]
    # each fold makes new constants (a superseded one goes at once: its name is free again)
    assert printed(g)[0] == "%add:f32[1,4,8,8] = Conv[pads=[1,1,1,1]](%x, %w_folded_0, %conv_B_folded)  # conv"
    check_numerics(m, {"x": randn(1, 3, 8, 8)}, rtol=1e-4, atol=1e-4)


def test_conv_then_per_channel_mul_without_bias_keeps_no_bias():
    m = model([node("Conv", ["x", "w"], ["c"]), node("Mul", ["c", "k"], ["y"])], X, ["y"],
              {"w": randn(4, 3, 1, 1), "k": randn(1, 4, 1, 1)})
    g, _ = run_pass(m, fold_batchnorm)
    assert printed(g) == ["%y:f32[1,4,8,8] = Conv(%x, %w_folded)  # c"]
    check_numerics(m, {"x": randn(1, 3, 8, 8)})


def test_standalone_bn_absorbs_mul_and_add():
    m = model([node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2]),
               node("BatchNormalization", ["p", "s", "b", "m", "v"], ["bn"]),
               node("Mul", ["bn", "k"], ["mul"]), node("Add", ["mul", "t"], ["y"])], X, ["y"],
              {**bn_inits(c=3), "k": randn(3, 1, 1), "t": randn(1, 3, 1, 1)})
    g, _ = run_pass(m, fold_batchnorm)
    assert printed(g)[1] == "%y:f32[1,3,7,7] = BatchNormalization(%p, %s_folded, %b_folded_0, %m, %v)  # bn"
    check_numerics(m, {"x": randn(1, 3, 8, 8)})


def test_not_folded():
    w, inits = randn(4, 3, 3, 3), bn_inits()
    bn = node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"])
    cases = {
        "conv read twice": model([node("Conv", ["x", "w"], ["c"]), bn, node("Relu", ["c"], ["z"])],
                                 X, ["y", "z"], {"w": w, **inits}),
        "conv output is a graph output": model([node("Conv", ["x", "w"], ["c"]), bn], X, ["c", "y"],
                                               {"w": w, **inits}),
        "weights not constant": model([node("Conv", ["x", "wx"], ["c"]), bn], {**X, "wx": [4, 3, 3, 3]},
                                      ["y"], inits),
        "bn parameters not constant": model(
            [node("Conv", ["x", "w"], ["c"]), bn], {**X, "m": [4]}, ["y"],
            {"w": w, **{k: v for k, v in inits.items() if k != "m"}}),
        "mul not per channel": model([node("Conv", ["x", "w"], ["c"]), node("Mul", ["c", "k"], ["y"])],
                                     X, ["y"], {"w": w, "k": randn(1, 1, 6, 6)}),
        "mul broadcasts up": model([node("Conv", ["x", "w"], ["c"]), node("Mul", ["c", "k"], ["y"])],
                                   X, ["y"], {"w": w, "k": randn(2, 4, 1, 1)}),
        "training bn": model([node("Conv", ["x", "w"], ["c"]),
                              node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y", "rm", "rv"],
                                   training_mode=1)], X, ["y"], {"w": w, **inits}),
    }
    for why, m in cases.items():
        g, changed = run_pass(m, fold_batchnorm)
        assert not changed, why


def test_shared_weights_are_not_modified():
    w = randn(4, 3, 3, 3)
    m = model([node("Conv", ["x", "w"], ["c1"]), node("BatchNormalization", ["c1", "s", "b", "m", "v"], ["y"]),
               node("Conv", ["x", "w"], ["z"])], X, ["y", "z"], {"w": w, **bn_inits()})
    g, _ = run_pass(m, fold_batchnorm)
    assert ops(g) == ["Conv", "Conv"]
    np.testing.assert_array_equal(g.values["w"].const, w)
    check_numerics(m, {"x": randn(1, 3, 8, 8)}, atol=1e-4)

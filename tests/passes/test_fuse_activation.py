"""fuse_activation: Before/Expected on small graphs, and numerics against onnx.reference."""
import importlib

import numpy as np
import pytest
from pass_check import check_numerics, model, node, ops, printed, randn, run_pass

import ge
from ge.compiler import import_model
from ge.passes import fuse_activation

fuse_module = importlib.import_module("ge.passes.fuse_activation")  # the package exports the function

X = {"x": [1, 3, 6, 6]}
W = {"w": randn(4, 3, 3, 3), "cb": randn(4)}
CONV = node("Conv", ["x", "w", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1])

# (activation node attributes, expected activation_params)
ACTIVATIONS = {
    "Relu": ({}, []),
    "LeakyRelu": ({"alpha": 0.2}, [0.2]),
    "Sigmoid": ({}, []),
    "HardSigmoid": ({"alpha": 0.3, "beta": 0.4}, [0.3, 0.4]),
    "Tanh": ({}, []),
    "HardSwish": ({}, []),
}


@pytest.mark.parametrize("act", ACTIVATIONS)
def test_conv_activation(act):
    attrs, params = ACTIVATIONS[act]
    m = model([CONV, node(act, ["c"], ["y"], **attrs)], X, ["y"], W)
    g, changed = run_pass(m, fuse_activation)
    assert changed
    p = ",".join(f"{x:g}" for x in params)
    assert printed(g) == [f"%y:f32[1,4,6,6] = ge::FusedConv[activation='{act}',activation_params=[{p}],"
                          f"pads=[1,1,1,1]](%x, %w, %cb)  # conv"]
    check_numerics(m, {"x": randn(1, 3, 6, 6)})


def test_leaky_relu_default_alpha_is_made_explicit():
    m = model([CONV, node("LeakyRelu", ["c"], ["y"])], X, ["y"], W)
    g, _ = run_pass(m, fuse_activation)
    assert g.nodes[0].attrs["activation_params"] == [pytest.approx(0.01)]


def test_clip_with_constant_bounds_old_and_new_opsets():
    new = model([CONV, node("Clip", ["c", "lo", "", ], ["y"])], X, ["y"], {**W, "lo": np.float32(-0.5)})
    g, _ = run_pass(new, fuse_activation)
    assert g.nodes[0].attrs["activation_params"] == [-0.5, float(np.finfo(np.float32).max)]
    check_numerics(new, {"x": randn(1, 3, 6, 6)})
    old = model([CONV, node("Clip", ["c"], ["y"], min=-1.0, max=1.0)], X, ["y"], W, opset=9)
    g, _ = run_pass(old, fuse_activation)
    assert g.nodes[0].attrs["activation_params"] == [-1.0, 1.0]
    check_numerics(old, {"x": randn(1, 3, 6, 6)})


def test_gemm_and_matmul_activation():
    m = model([node("Gemm", ["a", "b", "c"], ["g"], name="gemm", transB=1), node("Relu", ["g"], ["r"]),
               node("MatMul", ["r", "m"], ["mm"], name="matmul"), node("Relu", ["mm"], ["y"])],
              {"a": [2, 5]}, ["y"], {"b": randn(4, 5), "c": randn(4), "m": randn(4, 3)})
    g, _ = run_pass(m, fuse_activation)
    assert printed(g) == [
        "%r:f32[2,4] = ge::FusedGemm[activation='Relu',activation_params=[],transB=1](%a, %b, %c)  # gemm",
        "%y:f32[2,3] = ge::FusedMatMul[activation='Relu',activation_params=[]](%r, %m)  # matmul"]
    check_numerics(m, {"a": randn(2, 5)})


@pytest.mark.parametrize("bias_shape", [(3,), (1, 1, 3)])
def test_matmul_bias_and_activation(bias_shape):
    # Before: %h = MatMul(%a, %w); %s = Add(%h, %c); %y = Relu(%s)   (a linear layer, as torch exports it)
    m = model([node("MatMul", ["a", "w"], ["h"], name="linear"), node("Add", ["h", "c"], ["s"]),
               node("Relu", ["s"], ["y"])], {"a": [2, 4, 5]}, ["y"], {"w": randn(5, 3), "c": randn(*bias_shape)})
    g, _ = run_pass(m, fuse_activation)
    assert printed(g) == ["%y:f32[2,4,3] = ge::FusedMatMul[activation='Relu',activation_params=[]](%a, %w, %c)"
                          "  # linear"]
    a = {"a": randn(2, 4, 5)}
    assert np.array_equal(check_numerics(m, a)[0], check_numerics(m, a, disabled=("fuse_activation",))[0])


def test_matmul_add_that_is_no_bias_stays():
    for why, c in (("a full matrix", randn(4, 3)), ("a column", randn(4, 1)), ("wider than the output", randn(2, 1, 3))):
        m = model([node("MatMul", ["a", "w"], ["h"]), node("Add", ["h", "c"], ["y"])], {"a": [4, 5]}, ["y"],
                  {"w": randn(5, 3), "c": c})
        g, changed = run_pass(m, fuse_activation)
        assert not changed, why


@pytest.mark.parametrize("add", ["Add", "Sum"])
def test_conv_residual_add_relu(add):
    # Before: %c = Conv(%x, %w, %cb); %s = Add(%z, %c); %y = Relu(%s)   (ResNet: Sum of two inputs)
    m = model([node("Relu", ["x"], ["z"]), CONV, node(add, ["z", "c"], ["s"]), node("Relu", ["s"], ["y"])],
              {"x": [1, 4, 6, 6]}, ["y"], {"w": randn(4, 4, 3, 3), "cb": randn(4)})
    g, _ = run_pass(m, fuse_activation)
    assert printed(g)[1] == ("%y:f32[1,4,6,6] = ge::FusedConv[activation='Relu',activation_params=[],"
                             "pads=[1,1,1,1]](%x, %w, %cb, %z)  # conv")
    check_numerics(m, {"x": randn(1, 4, 6, 6)})


def test_residual_between_two_convs_fuses_the_nearest_and_no_bias_is_none():
    m = model([node("Conv", ["x", "w"], ["c1"], name="conv1"), node("Conv", ["x", "w"], ["c2"], name="conv2"),
               node("Add", ["c2", "c1"], ["y"])], {"x": [1, 4, 5, 5]}, ["y"], {"w": randn(4, 4, 1, 1)})
    g, _ = run_pass(m, fuse_activation)
    assert printed(g) == ["%c1:f32[1,4,5,5] = Conv(%x, %w)  # conv1",
                          "%y:f32[1,4,5,5] = ge::FusedConv[activation='',activation_params=[]]"
                          "(%x, %w, None, %c1)  # conv2"]
    check_numerics(m, {"x": randn(1, 4, 5, 5)})


def test_not_fused():
    w = {"w": randn(4, 4, 1, 1)}
    x = {"x": [1, 4, 5, 5]}
    conv = node("Conv", ["x", "w"], ["c"])
    cases = {
        "conv read twice": model([conv, node("Relu", ["c"], ["y"]), node("Transpose", ["c"], ["z"])],
                                 x, ["y", "z"], w),
        "conv output is a graph output": model([conv, node("Relu", ["c"], ["y"])], x, ["c", "y"], w),
        "clip bound not constant": model([conv, node("Clip", ["c", "lo"], ["y"])], {**x, "lo": []}, ["y"], w),
        "residual is the conv's own input": model([conv, node("Add", ["c", "x"], ["y"])], x, ["y"], w),
        "residual broadcasts": model([conv, node("Add", ["c", "b"], ["y"])], x, ["y"],
                                     {**w, "b": randn(1, 4, 1, 1)}),
        "add of the conv with itself": model([conv, node("Add", ["c", "c"], ["y"])], x, ["y"], w),
    }
    for why, m in cases.items():
        g, changed = run_pass(m, fuse_activation)
        assert not changed, why
    # the epilogue is for float outputs (no kernel multiplies int32 yet: the pass runs on the import)
    ints = model([node("MatMul", ["i", "j"], ["k"]), node("Relu", ["k"], ["y"])], {}, ["y"],
                 {"i": np.ones((2, 2), np.int32), "j": np.ones((2, 2), np.int32)})
    assert not fuse_activation(import_model(ints))


def test_activation_after_an_activated_fused_conv_stays():
    m = model([CONV, node("Relu", ["c"], ["r"]), node("Sigmoid", ["r"], ["y"])], X, ["y"], W)
    g, _ = run_pass(m, fuse_activation)
    assert ops(g) == ["ge::FusedConv", "Sigmoid"]
    check_numerics(m, {"x": randn(1, 3, 6, 6)})


def test_only_registered_fused_ops_are_made(monkeypatch):
    monkeypatch.setattr(fuse_module, "is_registered", lambda op, domain="": op != "FusedConv")
    m = model([CONV, node("Relu", ["c"], ["y"])], X, ["y"], W)
    g, changed = run_pass(m, fuse_activation)
    assert not changed and ops(g) == ["Conv", "Relu"]


def test_switch_off_by_name_and_environment(monkeypatch):
    m = model([CONV, node("Relu", ["c"], ["y"])], X, ["y"], W)
    assert [n.op_type for n in ge.compile(m).nodes] == ["FusedConv"]
    off = ge.compile(m, ge.Options(disabled_passes=("fuse_activation",)))
    assert [n.op_type for n in off.nodes] == ["Conv", "Relu"]
    monkeypatch.setenv("GE_DISABLE_PASSES", "fuse_activation")
    assert [n.op_type for n in ge.compile(m).nodes] == ["Conv", "Relu"]
    check_numerics(m, {"x": randn(1, 3, 6, 6)}, disabled=["fuse_activation"])

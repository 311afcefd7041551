"""fold_channel_scale: Before/Expected, numerics against onnx.reference and onnxruntime, the bits across AI-core
counts, and what stays a Mul."""
import numpy as np
import pytest
from pass_check import check_numerics, model, node, printed, randn, run_pass

import ge
from ge.kernels import conv as conv_kernels
from ge.passes import fold_channel_scale


@pytest.fixture(autouse=True)
def _pack_float32_convs(monkeypatch):
    """The pass's rules as on AVX-512, whatever this CPU: without it float32 convs stay unpacked
    (conv.PACK_FLOAT32; test_pack_conv_weights.py holds that rule)."""
    monkeypatch.setattr(conv_kernels, "PACK_FLOAT32", True)


def _se(c=8, m=24, hw=10, k=1, gate_shape=None, group=1, extra=(), **attrs):
    """Mul(x, sigmoid(g)) -> Conv(., w, b) [-> Add(., r)]: squeeze-excitation's scale then its project conv."""
    nodes = [node("Sigmoid", ["g"], ["s"]), node("Mul", ["x", "s"], ["h"]),
             node("Conv", ["h", "w", "b"], ["y"], name="conv", **({"group": group} if group > 1 else {}), **attrs),
             *extra]
    inputs = {"x": [1, c, hw, hw], "g": gate_shape or [1, c, 1, 1], **({"r": [1, m, hw, hw]} if extra else {})}
    return model(nodes, inputs, ["z" if extra else "y"], {"w": randn(m, c // group, k, k), "b": randn(m)})


def _feeds(m):
    return {i.name: randn(*[d.dim_value for d in i.type.tensor_type.shape.dim]) for i in m.graph.input}


def test_mul_into_the_conv_after_it():
    g, changed = run_pass(_se(), fold_channel_scale)
    assert changed
    assert printed(g)[1:] == ["%y:f32[1,24,10,10] = ge::ScaledConv(%x, %w, %b, None, %s)  # conv"]


@pytest.mark.parametrize("attrs", [{}, {"k": 3, "pads": [1, 1, 1, 1]}, {"k": 3, "strides": [2, 2]},
                                   {"gate_shape": [8, 1, 1]}])
def test_numerics_against_the_reference(attrs):
    m = _se(**attrs)
    sess = ge.Session(m)
    assert [n.op_type for n in sess.plan.nodes if "Conv" in n.op_type] == ["ScaledConv"]
    check_numerics(m, _feeds(m))


def test_residual_and_activation_ride_along():
    m = _se(extra=[node("Add", ["y", "r"], ["a"]), node("Relu", ["a"], ["z"])])
    (conv,) = [n for n in ge.Session(m).plan.nodes if "Conv" in n.op_type]
    assert conv.op_type == "ScaledConv" and conv.attrs["activation"] == "Relu" and conv.inputs[3] >= 0
    check_numerics(m, _feeds(m))


@pytest.mark.parametrize("k", [1, 3])
def test_same_bits_on_one_and_two_cores(k):
    m = _se(c=96, m=40, hw=28, k=k, pads=[k // 2] * 4)
    feeds = _feeds(m)
    one, two = (ge.Session(m, options=ge.Options(aicore_num=n)) for n in (1, 2))
    (launch,) = [n.launch for n in two.plan.nodes if n.op_type == "ScaledConv"]
    assert launch.block_dim == 2
    got = one.run(None, feeds)[0]
    np.testing.assert_array_equal(got, two.run(None, feeds)[0])
    np.testing.assert_array_equal(got, ge.Session(m, runtime="v2", options=ge.Options(aicore_num=2)).run(None, feeds)[0])
    ort = pytest.importorskip("onnxruntime")
    m.graph.output[0].type.tensor_type.elem_type = 1   # float: onnxruntime wants the output's type
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("why,m", [
    ("a scale per image", _se(gate_shape=[2, 8, 1, 1])),
    ("grouped conv", _se(group=2)),
    ("packed conv (64 output channels: IMPLICIT keeps its panels)", _se(m=64, k=3, pads=[1, 1, 1, 1])),
    ("the scaled map has another reader", model(
        [node("Mul", ["x", "g"], ["h"]), node("Conv", ["h", "w"], ["y"]), node("Relu", ["h"], ["r"])],
        {"x": [1, 8, 10, 10], "g": [1, 8, 1, 1]}, ["y", "r"], {"w": randn(24, 8, 1, 1)})),
    ("a scale per position", model([node("Mul", ["x", "g"], ["h"]), node("Conv", ["h", "w"], ["y"])],
                                   {"x": [1, 8, 10, 10], "g": [1, 1, 10, 10]}, ["y"], {"w": randn(24, 8, 1, 1)})),
])
def test_what_stays(why, m):
    if why == "a scale per image":   # x has a batch of 2 here
        m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2
    g, changed = run_pass(m, fold_channel_scale)
    assert not changed, why
    assert "Mul" in [n.op_type for n in g.nodes]

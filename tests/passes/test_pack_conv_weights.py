"""pack_conv_weights: Before/Expected on small graphs, bits against the unpacked run, and what stays."""
import numpy as np
import pytest
from pass_check import check_numerics, model, node, printed, randn, run_pass

import ge
from ge.kernels import conv as conv_kernels
from ge.kernels.conv_implicit import pack
from ge.passes import pack_conv_weights

X = {"x": [1, 8, 6, 6]}


@pytest.fixture(autouse=True)
def _pack_float32_convs(monkeypatch):
    """The pass's rules as on AVX-512, whatever this CPU: without it float32 convs stay unpacked
    (conv.PACK_FLOAT32; test_pack_conv_weights.py holds that rule)."""
    monkeypatch.setattr(conv_kernels, "PACK_FLOAT32", True)


def _conv(m: int, cg: int = 8, **attrs):
    return model([node("Conv", ["x", "w", "b"], ["y"], name="conv", **attrs)], X, ["y"],
                 {"w": randn(m, cg, 3, 3), "b": randn(m)})


def test_conv_becomes_a_fused_conv_reading_packed_weights():
    m = _conv(48, pads=[1, 1, 1, 1])
    g, changed = run_pass(m, pack_conv_weights)
    assert changed
    assert printed(g) == ["%y:f32[1,48,6,6] = ge::FusedConv[pads=[1,1,1,1],weight_shape=[48,8,3,3]]"
                          "(%x, %w_packed, %b)  # conv"]
    w = next(i for i in m.graph.initializer if i.name == "w")
    want = pack(np.frombuffer(w.raw_data, np.float32).reshape(48, 8, 3, 3), 1)
    assert np.array_equal(g.nodes[0].inputs[1].const, want)
    assert want.size == 48 * 8 * 9  # 48 channels: a panel of 32 and one of 16, nothing padded


def test_packed_run_keeps_the_bits():
    m = _conv(64, pads=[1, 1, 1, 1], strides=[2, 2])
    x = {"x": randn(1, 8, 6, 6)}
    packed = check_numerics(m, x)
    unpacked = check_numerics(m, x, disabled=("pack_conv_weights",))
    assert np.array_equal(packed[0], unpacked[0])


def test_fused_activation_and_residual_are_kept():
    m = model([node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
               node("Add", ["c", "x2"], ["s"]), node("Relu", ["s"], ["y"])],
              {"x": [1, 8, 6, 6], "x2": [1, 32, 6, 6]}, ["y"], {"w": randn(32, 8, 3, 3), "b": randn(32)})
    sess = ge.Session(m, runtime="v2")
    (conv,) = [n for n in sess.plan.nodes if n.op_type == "FusedConv"]
    assert conv.attrs["activation"] == "Relu" and conv.attrs["weight_shape"] == [32, 8, 3, 3]
    check_numerics(m, {"x": randn(1, 8, 6, 6), "x2": randn(1, 32, 6, 6)})


@pytest.mark.parametrize("why,m", [
    ("24 channels: a third of the last vector idle", _conv(24)),
    ("depthwise", model([node("Conv", ["x", "w"], ["y"], group=8)], X, ["y"], {"w": randn(8, 1, 3, 3)})),
    ("weights computed at run time", model([node("Conv", ["x", "w"], ["y"])], {"x": [1, 8, 6, 6], "w": [32, 8, 3, 3]},
                                           ["y"])),
])
def test_what_stays_unpacked(why, m):
    g, changed = run_pass(m, pack_conv_weights)
    assert not changed, why
    assert g.nodes[0].op_type == "Conv"


def test_offline_plan_keeps_packed_weights(tmp_path):
    m = _conv(32, pads=[1, 1, 1, 1])
    sess = ge.Session(m)
    ge.save(sess.plan, tmp_path / "m.gem")
    x = {"x": randn(1, 8, 6, 6)}
    assert np.array_equal(ge.Session(tmp_path / "m.gem").run(None, x)[0], sess.run(None, x)[0])


def _pointwise(cg: int, hw: int, m: int = 48, **attrs):
    return model([node("Conv", ["x", "w", "b"], ["y"], name="conv", **attrs)], {"x": [1, cg, hw, hw]}, ["y"],
                 {"w": randn(m, cg, 1, 1), "b": randn(m)})


@pytest.mark.parametrize("cg,hw,attrs,packed", [
    (16, 10, {}, False),                      # short K on a plane: POINTWISE
    (24, 8, {}, False),
    (40, 10, {}, True),                       # 40 input channels: IMPLICIT wins again
    (16, 1, {}, True),                        # SE's 1x1 plane: too few positions for POINTWISE
    (16, 10, {"strides": [2, 2]}, True),      # strided: not POINTWISE
    (16, 10, {"pads": [1, 1, 1, 1]}, True),   # padded: not POINTWISE
])
def test_small_k_pointwise_stays_unpacked(cg, hw, attrs, packed):
    m = _pointwise(cg, hw, **attrs)
    g, changed = run_pass(m, pack_conv_weights)
    assert changed == packed
    assert ("weight_shape" in g.nodes[0].attrs) == packed
    check_numerics(m, {"x": randn(1, cg, hw, hw)})


def test_float32_convs_stay_unpacked_without_avx512(monkeypatch):
    """conv.PACK_FLOAT32 (False where the CPU lacks AVX-512: IMPLICIT's tile would need 32 ymm of its 16) leaves float32
    convs to the GEMM lowerings, with the same bits; 16-bit maps still pack (only IMPLICIT reads them)."""
    m = _conv(48, pads=[1, 1, 1, 1])
    packed = ge.Session(m, runtime="v2")
    assert any("weight_shape" in n.attrs for n in packed.plan.nodes)
    monkeypatch.setattr(conv_kernels, "PACK_FLOAT32", False)
    assert not conv_kernels.wants_packed((48, 8, 3, 3), 1, "float32")
    assert conv_kernels.wants_packed((48, 8, 3, 3), 1, "float32", half=True)
    plain = ge.Session(m, runtime="v2")
    assert not any("weight_shape" in n.attrs for n in plain.plan.nodes)
    x = {"x": np.random.default_rng(0).standard_normal(X["x"]).astype(np.float32)}
    np.testing.assert_array_equal(plain.run(None, x)[0], packed.run(None, x)[0])

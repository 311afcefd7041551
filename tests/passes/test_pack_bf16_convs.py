"""pack_bf16_convs: Before/Expected, bfloat16 convs against the float32 path between the same Casts (within
bfloat16 rounding), the same bits for any core count, what stays, and the float32 fallback."""
import numpy as np
import pytest
from onnx import TensorProto
from pass_check import model, node, printed, randn, run_pass

import ge
from ge.kernels import conv_bf16
from ge.passes import pack_bf16_convs

needs_bf16 = pytest.mark.skipif(not conv_bf16.HAS_BF16, reason="this CPU has no AVX512_BF16")
BF16 = "allow_mix_precision_bf16"


def _casts(m_out: int, c_in: int = 8, k: int = 3, **attrs):
    """x -> bf16 -> f32 -> Conv -> bf16 -> f32: the pattern allow_mix_precision_bf16 leaves around a Conv."""
    bf, f = TensorProto.BFLOAT16, TensorProto.FLOAT
    return model([node("Cast", ["x"], ["xb"], to=bf), node("Cast", ["xb"], ["x32"], to=f),
                  node("Conv", ["x32", "w", "b"], ["c"], name="conv", **attrs),
                  node("Cast", ["c"], ["yb"], to=bf), node("Cast", ["yb"], ["y"], to=f)],
                 {"x": [1, c_in, 6, 6]}, ["y"], {"w": randn(m_out, c_in, k, k), "b": randn(m_out)})


@needs_bf16
def test_conv_between_casts_becomes_one_bf16_conv():
    g, changed = run_pass(_casts(16, pads=[1, 1, 1, 1]), pack_bf16_convs)
    assert changed
    assert printed(g)[2] == ("%yb:bf16[1,16,6,6] = ge::ConvBF16[pads=[1,1,1,1],weight_shape=[16,8,3,3]]"
                             "(%xb, %w_bf16, %b)  # conv")
    assert g.nodes[2].inputs[1].const.size == conv_bf16.packed_size(16, 8, 3, 3)


def _conv_model(c, m, hw, k, stride=1, pad=0, residual=False, relu=True):
    nodes = [node("Conv", ["x", "w", "b"], ["c"], name="conv", strides=[stride] * 2, pads=[pad] * 4)]
    out = "c"
    if residual:
        nodes.append(node("Add", ["c", "r"], ["s"]))
        out = "s"
    if relu:
        nodes.append(node("Relu", [out], ["y"]))
        out = "y"
    oh = (hw + 2 * pad - k) // stride + 1
    inputs = {"x": [1, c, hw, hw], **({"r": [1, m, oh, oh]} if residual else {})}
    m_ = model(nodes, inputs, [out], {"w": (randn(m, c, k, k) / np.sqrt(c * k * k)).astype(np.float32), "b": randn(m)})
    feeds = {"x": randn(1, c, hw, hw), **({"r": randn(1, m, oh, oh)} if residual else {})}
    return m_, feeds


CASES = {  # (C, M, H=W, k, stride, pad, residual): odd C, M not a multiple of 8, strides, the stem's 7x7
    "3x3": (8, 20, 9, 3, 1, 1, False), "3x3 s2 odd C": (7, 16, 11, 3, 2, 1, False),
    "1x1 residual": (16, 24, 6, 1, 1, 0, True), "1x1 s2 residual": (16, 32, 8, 1, 2, 0, True),
    "7x7 s2 C3": (3, 8, 20, 7, 2, 3, False), "3x3 residual": (8, 16, 9, 3, 1, 1, True),
    "3x3 in strips": (64, 8, 50, 3, 1, 1, True),  # Step 1's planes for 25 of 50 rows at a time
}


@needs_bf16
@pytest.mark.parametrize("case", list(CASES))
def test_bf16_conv_matches_the_float32_path(case, monkeypatch):
    m, feeds = _conv_model(*CASES[case])
    plan = ge.compile(m, ge.Options(precision_mode=BF16))
    assert [n.op_type for n in plan.nodes].count("ConvBF16") == 1
    got = ge.Session(plan, runtime="v1").run(None, feeds)[0]
    np.testing.assert_array_equal(ge.Session(plan, runtime="v2").run(None, feeds)[0], got)
    monkeypatch.setattr(conv_bf16, "USE_BF16", False)   # the same Casts, the conv in float32
    f32 = ge.compile(m, ge.Options(precision_mode=BF16))
    assert "ConvBF16" not in [n.op_type for n in f32.nodes]
    want = ge.Session(f32, runtime="v2").run(None, feeds)[0]
    # both read the same bfloat16 operands and round once: a bfloat16 step (2^-8 relative) at most, apart
    # from sums near zero (another order of the same float32 adds)
    np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=2 ** -8 * np.abs(want).max())


@needs_bf16
@pytest.mark.parametrize("M,C,H", [(64, 32, 16), (16, 64, 60)])  # 60 rows: 3 strips in one block, 1 in 3
def test_same_bits_for_any_core_count(M, C, H):
    """Blocks take output rows, K is never split: 1 and 3 blocks (run one after the other) give the same bits."""
    from ge.ir.dtypes import BFLOAT16
    from ge.kernels import KernelContext, TensorSpec, lookup
    from ge.kernels.registry import call
    x = randn(1, C, H, H).astype(BFLOAT16)
    w = (randn(M, C, 3, 3) / 17).astype(BFLOAT16)
    wp = np.empty(conv_bf16.packed_size(M, C, 3, 3), np.uint16)
    conv_bf16.pack_weights(w.view(np.uint16).reshape(-1), M, C, 3, 3, wp)
    b = randn(M)
    outs = []
    for cores in (1, 3):
        specs = [TensorSpec(x.shape, BFLOAT16), TensorSpec(wp.shape, BFLOAT16), TensorSpec(b.shape, np.float32)]
        ctx = KernelContext("ConvBF16", "c", {"pads": [1] * 4, "weight_shape": [M, C, 3, 3], "activation": "Relu"},
                            specs, [None] * 3, 1, cores=cores)
        launch = lookup("ConvBF16", "ge").bind(ctx)
        y = np.empty((1, M, H, H), BFLOAT16)
        call(launch, [x, wp.view(BFLOAT16), b], [y])
        outs.append((launch.block_dim, y))
    assert outs[0][0] == 1 and outs[1][0] == 3
    np.testing.assert_array_equal(outs[0][1].view(np.uint16), outs[1][1].view(np.uint16))


@pytest.mark.parametrize("why,m", [
    ("grouped", model([node("Cast", ["x"], ["xb"], to=TensorProto.BFLOAT16),
                       node("Cast", ["xb"], ["x32"], to=TensorProto.FLOAT),
                       node("Conv", ["x32", "w"], ["c"], group=2),
                       node("Cast", ["c"], ["y"], to=TensorProto.BFLOAT16)], {"x": [1, 8, 6, 6]}, ["y"],
                      {"w": randn(16, 4, 3, 3)})),
    ("its input is float32, no Cast from bfloat16", model(
        [node("Conv", ["x", "w"], ["c"]), node("Cast", ["c"], ["y"], to=TensorProto.BFLOAT16)],
        {"x": [1, 8, 6, 6]}, ["y"], {"w": randn(16, 8, 3, 3)})),
    ("its float32 result is a graph output", model(
        [node("Cast", ["x"], ["xb"], to=TensorProto.BFLOAT16), node("Cast", ["xb"], ["x32"], to=TensorProto.FLOAT),
         node("Conv", ["x32", "w"], ["y"])], {"x": [1, 8, 6, 6]}, ["y"], {"w": randn(16, 8, 3, 3)})),
])
def test_what_stays_float32(why, m):
    g, changed = run_pass(m, pack_bf16_convs)
    assert not changed, why


def test_without_avx512_bf16_the_float32_path_runs(monkeypatch):
    monkeypatch.setattr(conv_bf16, "HAS_BF16", False)
    m, feeds = _conv_model(8, 16, 6, 3, 1, 1)
    plan = ge.compile(m, ge.Options(precision_mode=BF16))
    assert "ConvBF16" not in [n.op_type for n in plan.nodes]
    assert ge.Session(plan, runtime="v2").run(None, feeds)[0].shape == (1, 16, 6, 6)


@pytest.mark.parametrize("specs,attrs,match", [
    ([[1, 8, 6, 6], [10], [16]], {"weight_shape": [16, 8, 3, 3]}, "packed weights of shape \\[16, 8, 3, 3\\] need"),
    ([[1, 8, 6, 6], [conv_bf16.packed_size(16, 8, 3, 3)], [16]], {"weight_shape": [16, 8, 3, 3], "activation": "Tanh"},
     "activation 'Tanh' is not supported"),
])
def test_bad_bf16_conv_nodes_are_refused(specs, attrs, match):
    from ge.errors import ShapeError
    from ge.ir.dtypes import BFLOAT16
    from ge.kernels import KernelContext, TensorSpec, lookup
    inputs = [TensorSpec(specs[0], BFLOAT16), TensorSpec(specs[1], BFLOAT16), TensorSpec(specs[2], np.float32)]
    ctx = KernelContext("ConvBF16", "c", attrs, inputs, [None] * 3, 1)
    with pytest.raises(ShapeError, match=match):
        lookup("ConvBF16", "ge").bind(ctx)

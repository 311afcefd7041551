"""pack_bf16_matmuls: Before/Expected, bfloat16 GEMMs against the float32 path between the same Casts (float32
rounding of the sums apart), the same bits for any core count, what stays, and bad nodes refused."""
import numpy as np
import pytest
from onnx import TensorProto
from pass_check import model, node, printed, randn, run_pass

import ge
from ge.ir.dtypes import BFLOAT16
from ge.kernels import conv_bf16, gemm_bf16
from ge.passes import pack_bf16_matmuls

needs_bf16 = pytest.mark.skipif(not conv_bf16.HAS_BF16, reason="this CPU has no AVX512_BF16")
BF, F = TensorProto.BFLOAT16, TensorProto.FLOAT


def _bf16_weights(*shape):
    return randn(*shape).astype(BFLOAT16).astype(np.float32)


def _casts(op, w, **attrs):
    """x -> bf16 -> f32 -> op(., w[, b]) : what allow_mix_precision_bf16 leaves before a MatMul / Gemm."""
    n = w.shape[0] if attrs.get("transB") else w.shape[1]
    return model([node("Cast", ["x"], ["xb"], to=BF), node("Cast", ["xb"], ["x32"], to=F),
                  node(op, ["x32", "w", "b"], ["y"], name="mm", **attrs)],
                 {"x": [3, 8]}, ["y"], {"w": w, "b": randn(n)})


@needs_bf16
def test_gemm_between_casts_becomes_one_bf16_matmul():
    g, changed = run_pass(_casts("Gemm", _bf16_weights(40, 8), transB=1), pack_bf16_matmuls)
    assert changed
    assert printed(g)[2] == "%y:f32[3,40] = ge::MatMulBF16[weight_shape=[8,40]](%xb, %w_bf16, %mm_bias)  # mm"
    assert g.nodes[2].inputs[1].const.size == gemm_bf16.packed_size(8, 40)


@pytest.mark.parametrize("why,m", [
    ("weights are not bfloat16 values", _casts("Gemm", randn(8, 40))),
    ("odd K", model([node("Cast", ["x"], ["xb"], to=BF), node("Cast", ["xb"], ["x32"], to=F),
                     node("MatMul", ["x32", "w"], ["y"])], {"x": [3, 7]}, ["y"], {"w": _bf16_weights(7, 40)})),
    ("its input is float32, no Cast from bfloat16", model(
        [node("MatMul", ["x", "w"], ["y"])], {"x": [3, 8]}, ["y"], {"w": _bf16_weights(8, 40)})),
    ("alpha", _casts("Gemm", _bf16_weights(8, 40), alpha=0.5)),
])
def test_what_stays_float32(why, m):
    g, changed = run_pass(m, pack_bf16_matmuls)
    assert not changed, why


def _mlp(rows=37, hidden=64, mlp=96):
    """An MLP: MatMul + bias + Relu, MatMul + bias (rows not a multiple of 8, columns not of 32)."""
    m = model([node("MatMul", ["x", "w1"], ["h"]), node("Add", ["h", "b1"], ["hb"]), node("Relu", ["hb"], ["g"]),
               node("MatMul", ["g", "w2"], ["o"]), node("Add", ["o", "b2"], ["y"])], {"x": [1, rows, hidden]}, ["y"],
              {"w1": randn(hidden, mlp) / 8, "b1": randn(mlp), "w2": randn(mlp, hidden) / 10, "b2": randn(hidden)})
    return m, {"x": randn(1, rows, hidden)}


@needs_bf16
def test_bf16_mlp_matches_the_float32_path(monkeypatch):
    m, feeds = _mlp()
    plan = ge.compile(m, ge.Options(precision_mode="allow_mix_precision_bf16"))
    ops = [(n.op_type, n.attrs.get("activation", "")) for n in plan.nodes]
    assert ops.count(("MatMulBF16", "Relu")) == 1 and ops.count(("MatMulBF16", "")) == 1
    got = ge.Session(plan, runtime="v1").run(None, feeds)[0]
    np.testing.assert_array_equal(ge.Session(plan, runtime="v2").run(None, feeds)[0], got)
    monkeypatch.setattr(conv_bf16, "USE_BF16", False)   # the same Casts, the GEMMs in float32
    f32 = ge.compile(m, ge.Options(precision_mode="allow_mix_precision_bf16"))
    assert "MatMulBF16" not in [n.op_type for n in f32.nodes]
    want = ge.Session(f32, runtime="v2").run(None, feeds)[0]
    # the same bfloat16 operands and epilogue; the sums' order differs, then both round to bfloat16: a
    # bfloat16 step apart at most (two roundings: the hidden layer's and the output's)
    np.testing.assert_allclose(got, want, rtol=2 ** -6, atol=2 ** -7 * np.abs(want).max())


@needs_bf16
@pytest.mark.parametrize("M,K,N", [(13, 64, 70), (1, 32, 200)])
def test_same_bits_for_any_core_count_and_numpy(M, K, N):
    """Blocks take column panels, K is never split: 1 and 3 blocks give the same bits, numpy's sums to float32
    rounding."""
    from ge.kernels.epilogue import RELU
    a, w, b = randn(M, K).astype(BFLOAT16), randn(K, N).astype(BFLOAT16), randn(N)
    wp = np.empty(gemm_bf16.packed_size(K, N), np.uint16)
    gemm_bf16.pack_b(w.view(np.uint16).reshape(-1), K, N, wp)
    outs = []
    for blocks in (1, 3):
        y = np.full(M * N, np.nan, np.float32)
        for i in range(blocks):
            gemm_bf16.matmul_bf16(a.view(np.uint16).reshape(-1), wp, b, y, M, N, K, RELU, 0.0, 0.0, i, blocks)
        outs.append(y.reshape(M, N))
    np.testing.assert_array_equal(outs[0], outs[1])
    want = np.maximum(a.astype(np.float64) @ w.astype(np.float64) + b, 0)
    np.testing.assert_allclose(outs[0], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("specs,attrs,match", [
    ([[3, 8], [10], [40]], {"weight_shape": [8, 40]}, "do not hold a matrix of weight_shape"),
    ([[3, 7], [gemm_bf16.packed_size(7, 40)], [40]], {"weight_shape": [7, 40]}, "even K"),
    ([[3, 8], [gemm_bf16.packed_size(8, 40)], [39]], {"weight_shape": [8, 40]}, "the bias must be 40 float32"),
])
def test_bad_bf16_matmul_nodes_are_refused(specs, attrs, match):
    from ge.errors import ShapeError
    from ge.kernels import KernelContext, TensorSpec, lookup
    inputs = [TensorSpec(specs[0], BFLOAT16), TensorSpec(specs[1], BFLOAT16), TensorSpec(specs[2], np.float32)]
    with pytest.raises(ShapeError, match=match):
        lookup("MatMulBF16", "ge").bind(KernelContext("MatMulBF16", "m", attrs, inputs, [None] * 3, 1))

"""pack_matmul_weights: Before/Expected on small graphs, bits against the unpacked run, and what stays."""
import numpy as np
import pytest
from pass_check import check_numerics, model, node, printed, randn, run_pass

import ge
from ge.kernels.gemm_packed import pack_b
from ge.passes import pack_matmul_weights


def _linear(n=40, x=(2, 5, 24)):
    return model([node("MatMul", ["x", "w"], ["h"], name="fc"), node("Add", ["h", "b"], ["y"])],
                 {"x": list(x)}, ["y"], {"w": randn(x[-1], n), "b": randn(n)})


def test_matmul_becomes_a_fused_matmul_reading_packed_weights():
    m = _linear()
    g, changed = run_pass(m, pack_matmul_weights)
    assert changed
    assert printed(g)[0] == "%h:f32[2,5,40] = ge::FusedMatMul[weight_shape=[24,40]](%x, %w_packed)  # fc"
    w = next(i for i in m.graph.initializer if i.name == "w")
    assert np.array_equal(g.nodes[0].inputs[1].const,
                          pack_b(np.frombuffer(w.raw_data, np.float32).reshape(24, 40)))


def test_packed_run_keeps_the_bits_and_the_bias_epilogue():
    m = _linear(n=200, x=(3, 70, 300))
    x = {"x": randn(3, 70, 300)}
    sess = ge.Session(m, runtime="v2")
    (mm,) = [n for n in sess.plan.nodes if n.op_type == "FusedMatMul"]
    assert mm.attrs["weight_shape"] == [300, 200] and len(mm.inputs) == 3  # the bias fused, then packed
    # sums of 300 products of N(0, 1) reach ~50: an output near 0 differs from onnx.reference's order by ~1e-5
    packed = check_numerics(m, x, atol=2e-4)
    unpacked = check_numerics(m, x, disabled=("pack_matmul_weights",), atol=2e-4)
    assert np.array_equal(packed[0], unpacked[0])
    v1 = ge.Session(m, options=ge.Options(aicore_num=2)).run(None, x)
    assert np.array_equal(v1[0], packed[0])


@pytest.mark.parametrize("why,m", [
    ("fewer columns than a panel", _linear(n=8)),
    ("batched weights", model([node("MatMul", ["x", "w"], ["y"])], {"x": [2, 3, 24]}, ["y"], {"w": randn(2, 24, 40)})),
    ("weights computed at run time", model([node("MatMul", ["x", "w"], ["y"])], {"x": [3, 24], "w": [24, 40]}, ["y"])),
])
def test_what_stays_unpacked(why, m):
    g, changed = run_pass(m, pack_matmul_weights)
    assert not changed, why
    assert g.nodes[0].op_type == "MatMul"

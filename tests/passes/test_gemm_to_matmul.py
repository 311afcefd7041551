"""gemm_to_matmul: a decoder step's Gemms over constant weights -> ge::FusedMatMul (then packed). Before/Expected,
what stays, and the invariant it rests on: a Gemm and the packed FusedMatMul give the same bits (one row:
gemv vs gemv_packed; more rows: gemm vs matmul_packed)."""
import numpy as np
import pytest
from pass_check import model, node, ops, printed, randn, run_pass

import ge
from ge.passes import gemm_to_matmul

K, N = 24, 40


def _decode(g):   # what ge/kv_cache.py's in_place leaves on a decoder step's graph
    g.kv_cache = {"max_len": 8}
    return gemm_to_matmul(g)


def _gemm(**attrs):
    w = randn(N, K) if attrs.get("transB") else randn(K, N)
    return model([node("Gemm", ["x", "w", "b"], ["y"], name="c_fc", **attrs)], {"x": [1, K]}, ["y"],
                 {"w": w, "b": randn(N)})


def test_a_decoder_steps_gemm_becomes_a_fused_matmul():
    g, changed = run_pass(_gemm(), _decode)
    assert changed and printed(g) == ["%y:f32[1,40] = ge::FusedMatMul(%x, %w, %b)  # c_fc"]
    m = _gemm(transB=1)
    g, changed = run_pass(m, _decode)
    w = next(i for i in m.graph.initializer if i.name == "w")
    assert changed and np.array_equal(g.nodes[0].inputs[1].const,
                                      np.frombuffer(w.raw_data, np.float32).reshape(N, K).T)


@pytest.mark.parametrize("why,m", [
    ("alpha", _gemm(alpha=0.5)), ("beta", _gemm(beta=2.0)), ("transA", model(
        [node("Gemm", ["x", "w"], ["y"], transA=1)], {"x": [K, 1]}, ["y"], {"w": randn(K, N)})),
    ("weights computed at run time", model([node("Gemm", ["x", "w"], ["y"])], {"x": [1, K], "w": [K, N]}, ["y"])),
])
def test_what_stays_a_gemm(why, m):
    g, changed = run_pass(m, _decode)
    assert not changed and ops(g) == ["Gemm"], why


def test_outside_a_decoder_step_nothing_changes():
    g, changed = run_pass(_gemm(), gemm_to_matmul)
    assert not changed and ops(g) == ["Gemm"]


@pytest.mark.parametrize("rows", [1, 5])
def test_a_gemm_and_the_packed_fused_matmul_give_the_same_bits(rows):
    w, b = randn(300, 200), randn(200)
    gemm = model([node("Gemm", ["x", "w", "b"], ["h"]), node("Relu", ["h"], ["y"])], {"x": [rows, 300]}, ["y"],
                 {"w": w, "b": b})
    matmul = model([node("MatMul", ["x", "w"], ["m"]), node("Add", ["m", "b"], ["h"]), node("Relu", ["h"], ["y"])],
                   {"x": [rows, 300]}, ["y"], {"w": w, "b": b})
    a, p = ge.Session(gemm, runtime="v2"), ge.Session(matmul, runtime="v2")
    assert [n.op_type for n in a.plan.nodes] == ["FusedGemm"]
    assert [(n.op_type, "weight_shape" in n.attrs) for n in p.plan.nodes] == [("FusedMatMul", True)]
    x = {"x": randn(rows, 300)}
    assert np.array_equal(a.run(None, x)[0], p.run(None, x)[0])

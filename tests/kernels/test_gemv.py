"""gemv.py: one row times B (a decode step's projections): plain and packed give the same bits, close to numpy,
with the bias epilogue; the MatMul / Gemm / packed FusedMatMul of a one-row A run it."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.kernels.gemm import k_depth
from ge.kernels.gemm_packed import pack_b
from ge.kernels.gemv import gemv, gemv_packed


def test_plain_and_packed_rows_are_the_same_bits():
    rng = np.random.default_rng(0)
    for K, N in ((70, 133), (300, 64), (5, 40), (20, 4200)):   # 8 + 4 + 1 rows a pass, columns past a chunk
        a, b = rng.standard_normal(K, np.float32), rng.standard_normal((K, N), np.float32)
        y, yp = np.full(N, np.nan, np.float32), np.full(N, np.nan, np.float32)
        gemv(a, b.reshape(-1), a, y, 1, N, K, K, 1, 0, 1.0, 1.0, 0, 0, 0.0, 0.0, 0, 1)
        for blk in range(2):   # two blocks of columns: each writes its own
            gemv_packed(a, pack_b(b), a, yp, 1, N, K, int(k_depth(K)), 0, 0, 0.0, 0.0, blk, 2)
        np.testing.assert_allclose(y, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
        assert np.array_equal(y, yp)


def test_one_row_models_match_onnxruntime():
    import onnxruntime as ort
    rng = np.random.default_rng(1)
    w, bias = rng.standard_normal((48, 80), np.float32), rng.standard_normal(80, np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"]), helper.make_node("MatMul", ["x", "w"], ["m"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 48])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 80]) for n in "gm"],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    sess = ge.Session(model)
    assert {n.launch.fn.__name__ for n in sess.plan.nodes} == {"gemv", "gemv_packed"}
    x = {"x": rng.standard_normal((1, 48), np.float32)}
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)
    for got, ref in zip(sess.run(None, x), want):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)

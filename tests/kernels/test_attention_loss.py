"""Attention (attention.py) and the loss ops (loss.py) against onnx.reference, beyond the ONNX node cases:
omitted middle outputs, GQA with a KV cache in 3-D, bool masks; bad targets."""
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from op_check import check_op, run_sessions

import ge
from ge.errors import ExecutionError, ShapeError

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_attention_3d_gqa_past_causal_window():
    q, k, v = randn(2, 3, 4 * 8), randn(2, 3, 2 * 8), randn(2, 3, 2 * 6)
    check_op("Attention", [q, k, v, None, randn(2, 2, 4, 8), randn(2, 2, 4, 6)],
             {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1, "left_window_size": 2}, opset=25, n_outputs=3)


def test_attention_bool_mask_softmax_output():
    q, k, v = randn(1, 2, 3, 4), randn(1, 2, 5, 4), randn(1, 2, 5, 4)
    mask = rng.random((3, 4)) > 0.4
    mask[1] = False  # a fully masked row: zeros
    check_op("Attention", [q, k, v, mask], {"qk_matmul_output_mode": 3, "scale": 0.3}, opset=23, n_outputs=4)


def test_attention_omitted_middle_outputs():
    """Y and qk_matmul_output asked for, present_key/value omitted (""): distinct internal names."""
    q, k, v = randn(1, 2, 3, 4), randn(1, 2, 5, 4), randn(1, 2, 5, 4)
    node = helper.make_node("Attention", ["q", "k", "v"], ["y", "", "", "qk"], softcap=2.0)
    graph = helper.make_graph([node], "att", [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
                                              for n, a in zip("qkv", (q, k, v))],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "qk")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    feeds = {"q": q, "k": k, "v": v}
    want = ReferenceEvaluator(model).run(None, feeds)
    for outs in run_sessions(model, feeds).values():
        for g, w in zip(outs, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_attention_bad_heads():
    with pytest.raises(ShapeError, match="q_num_heads"):
        ge.compile(_one_node("Attention", [randn(1, 3, 8)] * 3, {}, 23))


@pytest.mark.parametrize("attrs", [{}, {"reduction": "sum", "ignore_index": 1}, {"reduction": "none"}])
def test_nll_loss(attrs):
    x, t = randn(3, 4, 2), rng.integers(0, 4, (3, 2)).astype(np.int64)
    check_op("NegativeLogLikelihoodLoss", [x, t, np.abs(randn(4))], attrs, opset=13)


def test_softmax_cross_entropy_log_prob():
    x, t = randn(3, 5), rng.integers(0, 5, 3).astype(np.int64)
    check_op("SoftmaxCrossEntropyLoss", [x, t], {"ignore_index": 2}, opset=13, n_outputs=2)


def _one_node(op, inputs, attrs, opset):
    names = [f"x{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], op, [helper.make_tensor_value_info(n, TensorProto.FLOAT if a.dtype == np.float32
                                                                         else TensorProto.INT64, a.shape)
                                           for n, a in zip(names, inputs)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_target_out_of_range():
    x, t = randn(2, 3), np.array([0, 7], np.int64)
    with ge.Session(_one_node("NegativeLogLikelihoodLoss", [x, t], {}, 13), runtime="v2") as sess:
        with pytest.raises(ExecutionError, match="outside"):
            sess.run(None, {"x0": x, "x1": t})

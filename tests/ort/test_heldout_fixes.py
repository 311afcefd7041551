"""What the held-out run (tools/ort_heldout.py on onnxruntime's own API tests) found ge.ort lacking, run
against both onnxruntime and ge.ort (the `rt` fixture)."""
from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper

from .conftest import add_relu, feeds


def _identity_string() -> bytes:
    g = helper.make_graph([helper.make_node("Identity", ["input:0"], ["output:0"])], "ids",
                          [helper.make_tensor_value_info("input:0", TensorProto.STRING, [2, 2])],
                          [helper.make_tensor_value_info("output:0", TensorProto.STRING, [2, 2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_string_feeds_in_every_spelling(rt):
    sess = rt.InferenceSession(_identity_string(), providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].type == sess.get_outputs()[0].type == "tensor(string)"
    want = np.array([["Ol\u00e1", "\u4f60\u597d"], ["\uc5ec\ubcf4\uc138\uc694", "hello"]], dtype=object)   # (non-ASCII text)
    for x in (want.astype(str), want, want.tolist()):
        out, = sess.run(None, {"input:0": x})
        assert out.dtype == object and out.tolist() == want.tolist()
    out, = sess.run(None, {"input:0": np.array([b"must", b"have", b"same", b"size"], np.void).reshape(2, 2)})
    assert out.tolist() == [["must", "have"], ["same", "size"]]
    out, = sess.run(None, {"input:0": np.array([b"this", b"is", b"identity", b"test"]).reshape(2, 2)})
    assert out.astype("|S8").tolist() == [[b"this", b"is"], [b"identity", b"test"]]


def test_check_and_normalize_provider_args(rt):
    norm = importlib.import_module(rt.__name__ + ".capi.onnxruntime_inference_collection").check_and_normalize_provider_args
    valid = ["a", "b", "c"]
    assert norm(None, None, valid) == ([], [])
    assert norm(["a", "b"], None, valid) == (["a", "b"], [{}, {}])
    assert norm([("a", {1: 2}), "b"], None, valid) == (["a", "b"], [{"1": "2"}, {}])
    assert norm(["a", "b"], [{1: 2}, {}], valid) == (["a", "b"], [{"1": "2"}, {}])
    with pytest.warns(UserWarning):
        assert norm(["a", "b", "a"], [{"x": 1}, {}, {"y": 2}], valid) == (["a", "b"], [{"x": "1"}, {}])
    for providers, options in ((3, None), ([3], None), (["a"], 3), (["a"], ["not dict"]), (["a", "b"], [{1: 2}]),
                               ([("a", {1: 2})], [{3: 4}])):
        with pytest.raises(ValueError):
            norm(providers, options, valid)


def test_arena_cfg_fields(rt):
    cfg = rt.OrtArenaCfg(8, 0, 4, 2)
    assert (cfg.max_mem, cfg.arena_extend_strategy, cfg.initial_chunk_size_bytes, cfg.max_dead_bytes_per_chunk) == \
        (8, 0, 4, 2)
    given = {"max_mem": 32, "arena_extend_strategy": 1, "initial_chunk_size_bytes": 18, "max_dead_bytes_per_chunk": 14,
             "initial_growth_chunk_size_bytes": 12, "max_power_of_two_extend_bytes": 17}
    cfg = rt.OrtArenaCfg(given)
    assert {k: getattr(cfg, k) for k in given} == given


def test_provider_graph_assignment_info(rt):
    so = rt.SessionOptions()
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    sess = rt.InferenceSession(add_relu(), so, providers=["CPUExecutionProvider"])
    subgraphs = sess.get_provider_graph_assignment_info()
    nodes = sorted(f"{n.domain}:{n.op_type}/{n.name}" for s in subgraphs for n in s.get_nodes())
    assert nodes == [":Add/add0", ":Relu/relu0"]
    assert {s.ep_name for s in subgraphs} == {"CPUExecutionProvider"}
    plain = rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="session.record_ep_graph_assignment_info"):
        plain.get_provider_graph_assignment_info()


def test_native_session_runs_ort_values(rt):
    sess = rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"])
    f = feeds()
    values = {k: rt.OrtValue.ortvalue_from_numpy(v)._get_c_value() for k, v in f.items()}
    C = importlib.import_module(rt.__name__ + ".capi.onnxruntime_pybind11_state")
    out = sess._sess.run_with_ort_values(values, ["z"], C.RunOptions())
    assert isinstance(out, C.OrtValueVector)
    np.testing.assert_array_equal(out[0].numpy(), np.maximum(f["x"] + f["y"], 0))


def test_a_raising_logger_callback_under_pythons_own_hook(capsys, monkeypatch):
    """CPython's sys.__unraisablehook__ takes only its own record type: ge reports the callback's error
    itself then (it raised TypeError in the middle of a session's load before)."""
    import ge.ort
    from ge.ort.logging import log
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)
    ge.ort.set_default_logger_callback(lambda *a: 1 / 0, severity=0)
    try:
        log(2, "a message")
    finally:
        ge.ort.set_default_logger_callback(None)
        ge.ort.set_default_logger_severity(2)
    assert "ZeroDivisionError" in capsys.readouterr().err


def test_sparse_tensors_coo_and_csr(rt):
    cpu = rt.OrtDevice.make("cpu", 0)
    values, indices = np.array([1.0, 2.0, 3.0], np.float32), np.array([3, 5, 15], np.int64)
    st = rt.SparseTensor.sparse_coo_from_numpy([9, 9], values, indices, cpu)
    assert (st.format(), st.dense_shape(), st.data_type(), st.device_name()) == \
        (rt.OrtSparseFormat.ORT_SPARSE_COO, [9, 9], "sparse_tensor(float)", "cpu")
    assert not st.values().flags.writeable and not st.as_coo_view().indices().flags.writeable
    np.testing.assert_array_equal(st.values(), values)
    np.testing.assert_array_equal(st.as_coo_view().indices(), indices)
    v = rt.OrtValue.ort_value_from_sparse_tensor(st)
    assert v.is_sparse_tensor() and not v.is_tensor()
    np.testing.assert_array_equal(v.as_sparse_tensor().values(), values)
    text = rt.SparseTensor.sparse_coo_from_numpy([9, 9], np.array(["xyz", "yxz", "zyx"]), indices, cpu)
    assert text.data_type() == "sparse_tensor(string)" and list(text.values()) == ["xyz", "yxz", "zyx"]
    with pytest.raises(RuntimeError):
        st.to_cuda(rt.OrtDevice.make("cuda", 0))
    inner, outer = np.array([1, 1, 1], np.int64), np.array([0, 1, 2, 3, 3, 3, 3, 3, 3, 3], np.int64)
    csr = rt.SparseTensor.sparse_csr_from_numpy([9, 9], values, inner, outer, cpu)
    assert csr.format() == rt.OrtSparseFormat.ORT_SPARSE_CSRC and csr.data_type() == "sparse_tensor(float)"
    np.testing.assert_array_equal(csr.as_csrc_view().inner(), inner)
    np.testing.assert_array_equal(csr.as_csrc_view().outer(), outer)
    assert not csr.as_csrc_view().outer().flags.writeable

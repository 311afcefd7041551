"""The transformers exports (tests/fixtures/transformers) with every input shape fixed compile to static plans
that runtime="auto" runs on runtime_v1, with the outputs of onnxruntime and PyTorch eager; and every tool
works on them as exported (dynamic axes)."""
import json

import numpy as np
import onnxruntime as ort
import pytest

import ge
from ge import exports
from ge.cli import main

TINY = ["bert_tiny", "bert_tiny_eager", "bert_tiny_dynamo", "gpt2_tiny", "gpt2_tiny_step"]
BERT = exports.path("bert_tiny")
FIXED = "input_ids:1,8;attention_mask:1,8;token_type_ids:1,8"


@pytest.mark.parametrize("name", TINY)
def test_fixed_shapes_make_a_static_plan_that_auto_runs_on_v1(name):
    feeds, torch_out = exports.reference(name)
    sess = ge.Session(exports.path(name), options=ge.Options(input_shape={k: v.shape for k, v in feeds.items()}))
    assert not sess.plan.is_dynamic
    stats = sess.stats()
    assert sess.runtime == "v1" and stats["runtime"] == "v1" and "every shape is static" in stats["runtime_reason"]
    got = sess.run(None, feeds)
    want = ort.InferenceSession(exports.path(name), providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w, o in zip(got, want, sess.get_outputs()):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(g, torch_out[o.name], rtol=1e-5, atol=1e-5)


def test_as_exported_auto_stays_on_v2_and_says_why():
    sess = ge.Session(BERT)
    assert sess.runtime == "v2" and sess.plan.is_dynamic
    why = sess.stats()["runtime_reason"]
    assert why.startswith("auto: ") and "input_ids['batch', 'sequence']" in why and "--input-shape" in why


def test_ge_plan_says_which_nodes_stay_dynamic_and_why(capsys):
    assert main(["plan", BERT]) == 0
    out = capsys.readouterr().out
    assert "have shapes known only at run time" in out and "because input dims known only at run time" in out
    assert main(["plan", BERT, "--input-shape", FIXED]) == 0
    out = capsys.readouterr().out
    assert "dynamic" not in out and "planned" in out


def test_ge_run_prints_the_runtime_its_reason_and_the_memory_run(capsys):
    assert main(["run", BERT, "--repeat", "1", "--input-shape", FIXED]) == 0
    out = capsys.readouterr().out
    assert "runtime   v1" in out and "why       auto: every shape is static" in out
    assert main(["run", BERT, "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("memory"))
    peak = float(line.split("allocator peak ")[1].split(" MiB")[0])
    assert "runtime   v2" in out and peak > 0   # runtime_v2's caching allocator, not a 0.00 MiB static table


def test_ge_profile_and_report_on_a_dynamic_export(tmp_path, capsys):
    trace = tmp_path / "t.json"
    assert main(["profile", BERT, "--trace", str(trace)]) == 0
    captured = capsys.readouterr()
    assert "traced at the feeds' shapes" in captured.err and "static" in captured.err
    assert any(e.get("ph") == "X" for e in json.loads(trace.read_text())["traceEvents"])
    assert main(["report", BERT, "-o", str(tmp_path / "r.html"), "--input-shape", FIXED]) == 0
    assert (tmp_path / "r.html").stat().st_size > 1000


def test_enable_profiling_on_a_dynamic_export(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    so = ge.SessionOptions()
    so.enable_profiling = True
    sess = ge.InferenceSession(BERT, so)
    feeds = exports.bert_feeds(1, 8, vocab=100)
    want = ort.InferenceSession(BERT, providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(sess.run(None, feeds), want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    events = json.loads((tmp_path / sess.end_profiling()).read_text())   # onnxruntime's format: a list
    assert any(e["cat"] == "Node" and "MatMul" in e["args"]["op_name"] for e in events)


def test_a_dynamic_export_saved_and_loaded_runs(tmp_path):
    # the Shape nodes of symbolic inputs have static outputs that runtime_v2 allocates: the offline
    # verifier refused such a plan ("static tensor ... has no place")
    path = ge.save(ge.compile(BERT), str(tmp_path / "bert.gem"))
    sess = ge.Session(path)
    feeds = exports.bert_feeds(1, 8, vocab=100)
    want = ort.InferenceSession(BERT, providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(sess.run(None, feeds), want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    with pytest.raises(ge.GEError, match="compile the model with its input shapes fixed"):
        sess.run_traced(feeds, ge.npu.Tracer("bert"))

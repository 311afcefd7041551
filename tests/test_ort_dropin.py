"""ge.InferenceSession runs a script written for onnxruntime, changed only in its import."""
import json
import os

import numpy as np
import onnxruntime
import pytest

import ge
from ge.zoo import light_model_path

SCRIPT = """
so = ort.SessionOptions()
so.intra_op_num_threads = 1
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
sess = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])
inp = sess.get_inputs()[0]
out = sess.get_outputs()[0]
x = np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)
y = sess.run([out.name], {inp.name: x})[0]
binding = sess.io_binding()
binding.bind_cpu_input(inp.name, x)
binding.bind_output(out.name)
sess.run_with_iobinding(binding)
result = dict(name=inp.name, shape=inp.shape, type=inp.type, out=out.name, y=y,
              bound=binding.copy_outputs_to_cpu()[0], producer=sess.get_modelmeta().producer_name,
              providers=sess.get_providers())
"""


def _run(module, path):
    scope = {"ort": module, "np": np, "path": path}
    exec(SCRIPT, scope)
    return scope["result"]


def test_an_onnxruntime_script_runs_unchanged_but_for_the_import():
    path = light_model_path("squeezenet")
    want, got = _run(onnxruntime, path), _run(ge, path)
    for key in ("name", "shape", "type", "out", "producer"):
        assert got[key] == want[key]
    assert "CPUExecutionProvider" in got["providers"]
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(got["bound"], got["y"])


def test_profiling_writes_a_trace_and_options_map(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    so = ge.SessionOptions()
    so.enable_profiling = True
    so.graph_optimization_level = ge.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ge.InferenceSession(light_model_path("squeezenet"), so)
    assert sess.session.plan.options.thread_budget == 1 and "fuse_activation" in \
        sess.session.plan.options.disabled_passes
    x = np.ones(sess.get_inputs()[0].shape, np.float32)
    sess.run(None, {sess.get_inputs()[0].name: x})
    name = sess.end_profiling()
    events = json.load(open(name))   # onnxruntime's format: a list of events
    assert any(e["cat"] == "Node" and e["args"]["op_name"] == "Conv" for e in events)
    assert json.load(open(sess.profiling_trace_file))["traceEvents"]   # ge's Perfetto trace beside it


def test_unknown_providers_warn_as_onnxruntime_does():
    with pytest.warns(UserWarning, match="not in available provider names"):
        ge.InferenceSession(light_model_path("squeezenet"), providers=["CUDAExecutionProvider"])

"""Never silent (issue 44): progress as plain lines when piped, a bar on a terminal with kernel names whole,
logging records on the logger "ge" from the Python API, Options(progress=True) / GE_PROGRESS=1, and the
summary's "compiled" vs "from cache"."""
import io
import logging
import os
import re
import subprocess
import sys
import time

import numpy as np
from numba import njit
from onnx import TensorProto, helper

import ge
from ge.npu import progress
from ge.progress_bar import Progress, Timing, how

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tiny(tmp_path) -> str:
    """y = Relu(x) + 1 over [2, 3]: two elementwise kernels."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "one"], ["y"])]
    m = helper.make_model(helper.make_graph(nodes, "tiny", [x], [y], [one]),
                          opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "tiny.onnx"
    path.write_bytes(m.SerializeToString())
    return str(path)


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_piped_progress_is_plain_lines_while_work_is_open():
    out = io.StringIO()
    with Progress(stream=out, interval=0.01, every=0.05) as p:
        with p.phase("load"), progress.step("compiling kernels", 2) as advance:
            advance("conv.conv (node 'conv1')", False)
            time.sleep(0.3)
            advance("gemm.gemm (node 'fc')", True)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and len(lines) >= 3
    assert any("load > compiling kernels  1/2" in ln and "conv.conv (node 'conv1')" in ln for ln in lines)
    assert all(ln.startswith("ge: ") and " s" in ln for ln in lines)
    assert lines[-1].startswith("ge: load > compiling kernels 2/2 in ") and "(1 compiled, 1 from cache)" in lines[-1]


def test_piped_lines_name_the_kernel_numba_compiles_and_count_its_specializations():
    @njit
    def callee(x):
        return x + 1

    @njit
    def kernel(x):
        return callee(x) * 2

    out = io.StringIO()
    with Progress(stream=out, interval=0.01, every=0.02) as p, p.phase("first run"):
        kernel(1)
        kernel(1.0)   # a second argument type: a second specialization
        kernel(2)     # compiled already: no event
    text = out.getvalue()
    name = f"{__name__.removeprefix('ge.')}.{kernel.py_func.__qualname__}"
    assert f"numba compiling {name}" in text
    k, c = p.compiles[name], p.compiles[f"{__name__}.{callee.py_func.__qualname__}"]
    assert (k.count, k.outer, c.count, c.outer) == (2, 2, 2, 0)
    assert k.seconds >= k.own > 0 and np.isclose(k.seconds - k.own, c.seconds)
    assert p.numba_seconds()[0] == 2


def test_terminal_bar_keeps_kernel_names_whole():
    out = _Tty()   # no terminal size: 100 columns
    long = "conv_depthwise_blocked.depthwise_rows_blocked_tile"
    with Progress(stream=out, interval=0.01) as p:
        with p.phase("load a model with a long phase name"), progress.step("compiling kernels", 40) as advance:
            advance(f"{long} (node 'model/stage4/block3/depthwise_conv2d/a/very/long/node/name')", False)
            p.numba_compiling(long)
            time.sleep(0.05)
            p.numba_compiling(None)
    drawn = [ln for ln in out.getvalue().split("\r") if ln.strip()]
    assert drawn and all(len(ln.rstrip()) < 100 for ln in drawn)
    assert any(f"numba compiling {long}" in ln and "1/40" in ln for ln in drawn)


def test_summary_says_compiled_or_from_cache():
    assert how(Timing("k", total=5, compiled=5)) == "5 compiled"
    assert how(Timing("k", total=5, compiled=2, cached=3)) == "2 compiled, 3 from cache"
    assert how(Timing("k", total=5)) == "in memory"


def test_the_api_reports_through_logging(tmp_path, caplog):
    path = _tiny(tmp_path)
    with caplog.at_level(logging.INFO, logger="ge"):
        sess = ge.Session(path, runtime="v2")
        y, = sess.run(None, {"x": -np.ones((2, 3), np.float32)})
    np.testing.assert_array_equal(y, np.ones((2, 3), np.float32))
    text = [r.getMessage() for r in caplog.records if r.name == "ge"]
    for phase in ("import: ", "passes: ", "planning: ", "runtime load: ", "warm-up: ", "first run: "):
        assert any(m.startswith(phase) and m.endswith(" s") for m in text), (phase, text)
    kernels = [m for m in text if m.startswith("warm-up > compiling kernels:")]
    assert kernels and any(w in kernels[0] for w in ("compiled", "from cache", "in memory"))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ge"):
        sess.run(None, {"x": np.ones((2, 3), np.float32)})   # warm runs say nothing
    assert not [r for r in caplog.records if r.name == "ge"]


def test_the_api_is_silent_on_stderr_unless_asked(tmp_path, capsys, monkeypatch):
    path = _tiny(tmp_path)
    monkeypatch.setenv("GE_PROGRESS_EVERY", "0")   # a line at every event: the tiny model is quick
    monkeypatch.delenv("GE_PROGRESS", raising=False)
    ge.Session(path, runtime="v2").run(None, {"x": np.ones((2, 3), np.float32)})
    assert capsys.readouterr().err == ""
    ge.Session(path, runtime="v2", options=ge.Options(progress=True)).run(None, {"x": np.ones((2, 3), np.float32)})
    err = capsys.readouterr().err.splitlines()
    assert any(ln.startswith("ge: passes in ") for ln in err) and any(ln.startswith("ge: first run") for ln in err)
    monkeypatch.setenv("GE_PROGRESS", "1")
    ge.Session(path, runtime="v2").run(None, {"x": np.ones((2, 3), np.float32)})
    err = capsys.readouterr().err.splitlines()
    assert any(ln.startswith("ge: planning in ") for ln in err) and any(ln.startswith("ge: first run") for ln in err)


def test_ge_run_piped_prints_lines_and_says_from_cache(tmp_path):
    path = _tiny(tmp_path)
    ge.Session(path, runtime="v1").run(None, {"x": np.ones((2, 3), np.float32)})   # the disk caches filled
    env = dict(os.environ, GE_PROGRESS_EVERY="0", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "ge.cli", "run", path, "--runtime", "v1", "--repeat", "1"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    err = p.stderr.splitlines()
    assert "\r" not in p.stderr and err and all(ln.startswith("ge: ") for ln in err)
    assert any(ln.startswith("ge: load > import") for ln in err)
    time_line = next(ln for ln in p.stdout.splitlines() if ln.startswith("time"))
    assert "from cache)" in time_line and "compiled" not in time_line   # a second process: nothing compiles


def test_ge_warmup_fills_the_caches_in_parallel_workers_and_says_how(tmp_path, capsys):
    from ge.cli import main
    a = _tiny(tmp_path)
    (tmp_path / "b").mkdir()
    b = _tiny(tmp_path / "b")
    assert main(["warmup", a, b, "--jobs", "2", "--runtime", "v1"]) == 0
    out = capsys.readouterr().out.splitlines()
    ready = [ln for ln in out if ln.startswith("ready")]
    assert len(ready) == 2 and all(re.search(r"kernels \d+ in [\d.]+ \(", ln) for ln in ready), out
    assert all("compiled" in ln or "from cache" in ln for ln in ready) and out[-1].startswith("warmup    done in")
    assert main(["warmup", "no_such_model"]) == 2   # named before any worker starts
    assert "no_such_model" in capsys.readouterr().err

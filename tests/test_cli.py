import numpy as np
import pytest
from onnx import TensorProto, helper

from ge.cli import main


def test_ge_run_default_model(capsys):
    """README's main job: `ge run` on the light ResNet-50 shipped inside onnx."""
    assert main(["run", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "light_resnet50.onnx" in out and "checksum" in out and "latency" in out and "memory" in out


def test_ge_run_bad_model_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    assert main(["run", str(bad)]) == 2
    assert "ge: error:" in capsys.readouterr().err


def test_ge_run_given_model(tmp_path, capsys):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "t", [x], [y]))
    path = tmp_path / "relu.onnx"
    path.write_bytes(m.SerializeToString())
    assert main(["run", str(path), "--repeat", "2"]) == 0
    assert f"sum={float(np.ones(4).sum()):.6f}" in capsys.readouterr().out


def test_ge_bench_table_json_and_plot(tmp_path, capsys):
    import json
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])
    m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "t", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "relu.onnx"
    path.write_bytes(m.SerializeToString())
    args = ["bench", str(path), "--runtime", "v1,v2", "--vs", "onnxruntime", "--rounds", "3",
            "--json", str(tmp_path / "b.json"),
            "--plot", str(tmp_path / "b.png")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "ge v1" in out and "ge v2" in out and "onnxruntime" in out and "median ms" in out
    assert "not spinning" in out   # the setting a comparison was made with is printed beside it
    rows = json.loads((tmp_path / "b.json").read_text())["rows"]
    assert [r["name"] for r in rows] == ["ge v1", "ge v2", "onnxruntime"] and rows[0]["ratio"] == 1.0
    assert (tmp_path / "b.png").stat().st_size > 1000


def test_ge_bench_unknown_runtime_is_clear(capsys):
    assert main(["bench", "--runtime", "v9", "--rounds", "1"]) == 2
    assert "unknown runtime" in capsys.readouterr().err


def test_ge_bench_streams(tmp_path, capsys):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 8])
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["x"], ["b"]),
             helper.make_node("Add", ["a", "b"], ["y"])]
    m = helper.make_model(helper.make_graph(nodes, "t", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "branches.onnx"
    path.write_bytes(m.SerializeToString())
    assert main(["bench", str(path), "--runtime", "v2", "--streams", "1,2", "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    assert "ge v2 1 stream " in out and "ge v2 2 streams" in out


def test_ge_bench_by_op_puts_families_side_by_side(tmp_path, capsys):
    """Issue #17's tool: per op family, ge's traced kernel time beside onnxruntime's node profile."""
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 16])
    inits = [helper.make_tensor("dw", TensorProto.FLOAT, [8, 1, 3, 3], rng.standard_normal(72).tolist()),
             helper.make_tensor("pw", TensorProto.FLOAT, [16, 8, 1, 1], rng.standard_normal(128).tolist())]
    nodes = [helper.make_node("Conv", ["x", "dw"], ["a"], group=8, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["b"]), helper.make_node("Conv", ["b", "pw"], ["y"])]
    m = helper.make_model(helper.make_graph(nodes, "t", [x], [y], inits), opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "dw.onnx"
    path.write_bytes(m.SerializeToString())
    assert main(["bench", str(path), "--by-op", "--threads", "1", "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    rows = {line.split("  ")[0].strip(): line.split() for line in out.splitlines()}
    for fam in ("Conv depthwise 3x3", "Conv 1x1"):
        ge_ms, ge_nodes, ort_ms, ort_nodes = rows[fam][-6:-2]
        assert float(ge_ms) > 0 and int(ge_nodes) == 1 and float(ort_ms) > 0 and int(ort_nodes) == 1, out
    assert "kernels" in rows


def test_op_families():
    from ge.byop import family
    assert family("FusedConv", [(1, 32, 56, 56), (32, 1, 3, 3)]) == "Conv depthwise 3x3"
    assert family("Conv", [(1, 32, 56, 56), (64, 8, 1, 1)]) == "Conv grouped 1x1"
    assert family("Conv", [(1, 32, 56, 56), (64, 32, 7, 7), None]) == "Conv 7x7"
    assert family("MatMul", [(1, 12, 197, 64), (1, 12, 64, 197)]) == "MatMul batched"
    assert family("FusedMatMul", [(197, 768), (768, 3072)]) == family("Gemm", [(1, 2048), (1000, 2048)]) == "MatMul / Gemm"
    assert family("ReorderInput", [(1, 32, 56, 56)]) == "Reorder (NCHWc)"


def test_per_family_takes_each_nodes_median_or_fastest_run():
    from ge.byop import _per_family
    runs = {"a": [3e-3, 1e-3, 2e-3], "b": [5e-3, 4e-3, 9e-3]}
    fams = {"a": "MatMul / Gemm", "b": "MatMul / Gemm"}
    assert _per_family(runs, fams) == {"MatMul / Gemm": (pytest.approx(7.0), 2)}
    assert _per_family(runs, fams, "fastest") == {"MatMul / Gemm": (pytest.approx(5.0), 2)}


# -- the flags atc / trtexec / tvmc users reach for (issue #16) --------------------------------------------

def _symbolic(tmp_path):
    """A tiny model with a symbolic batch: y = Relu(x) + 1 over [N, 3]."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "one"], ["y"])]
    m = helper.make_model(helper.make_graph(nodes, "sym", [x], [y], [one]),
                          opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "sym.onnx"
    path.write_bytes(m.SerializeToString())
    return str(path)


def test_input_shape_fixes_a_symbolic_dim_and_runs_v1(tmp_path, capsys):
    path, out = _symbolic(tmp_path), tmp_path / "y.npz"
    assert main(["run", path, "--input-shape", "x:4,3", "--runtime", "v1", "--repeat", "1",
                 "--save-outputs", str(out)]) == 0
    assert "runtime   v1" in capsys.readouterr().out
    y = np.load(out)["y"]
    assert y.shape == (4, 3) and (y == 2).all()


def test_symbolic_dims_without_input_shape_are_said(tmp_path, capsys):
    assert main(["run", _symbolic(tmp_path), "--repeat", "0"]) == 0
    err = capsys.readouterr().err
    assert "symbolic dims ['N']" in err and "--input-shape x:1,3" in err


def test_input_shape_errors_name_the_input(tmp_path, capsys):
    path = _symbolic(tmp_path)
    assert main(["run", path, "--input-shape", "nope:1,3"]) == 2
    assert "not an input" in capsys.readouterr().err
    assert main(["run", path, "--input-shape", "x:2,4"]) == 2
    assert "axis 1" in capsys.readouterr().err
    assert main(["plan", path, "--runtime", "v1"]) == 2   # v1 needs static shapes: says how
    assert "--input-shape" in capsys.readouterr().err


def test_inputs_from_npz_and_npy_warmup_and_saved_outputs(tmp_path, capsys):
    path = _symbolic(tmp_path)
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    np.save(tmp_path / "in.npy", x)
    for data in ("in.npz", "in.npy"):
        out = tmp_path / f"out_{data}.npz"
        assert main(["run", path, "--inputs", str(tmp_path / data), "--warmup", "3", "--repeat", "2",
                     "--save-outputs", str(out)]) == 0
        np.testing.assert_array_equal(np.load(out)["y"], np.maximum(x, 0) + 1)
    assert "after 3 warm-up runs" in capsys.readouterr().out
    np.savez(tmp_path / "wrong.npz", z=x)
    assert main(["run", path, "--inputs", str(tmp_path / "wrong.npz")]) == 2
    assert "no array for input(s) x" in capsys.readouterr().err


def test_dynamic_batch_on_run(tmp_path, capsys):
    assert main(["run", _symbolic(tmp_path), "--dynamic-batch", "1,2,4", "--input-shape", "x:1,3"]) == 2
    assert "symbolic batch dim" in capsys.readouterr().err   # a fixed shape leaves no batch to gear
    assert main(["run", _symbolic(tmp_path), "--dynamic-batch", "1,2,4", "--repeat", "1"]) == 0
    assert "runtime   v1" in capsys.readouterr().out


def test_runtime_and_max_streams_on_every_command(tmp_path, capsys):
    path = _symbolic(tmp_path)
    for cmd in (["run"], ["plan"], ["profile", "--trace", str(tmp_path / "t.json")],
                ["compile", "-o", str(tmp_path / "m.gem")], ["report", "-o", str(tmp_path / "r.html")]):
        with pytest.raises(SystemExit):   # argparse refuses an unknown runtime before any work
            main(cmd + [path, "--runtime", "v9"])
        assert "unknown runtime 'v9'" in capsys.readouterr().err
        assert main(cmd + [path, "--runtime", "v2", "--max-streams", "1", "--input-shape", "x:2,3"]) == 0, cmd
    assert main(["bench", path, "--runtime", "v2,v7", "--rounds", "1"]) == 2
    assert "unknown runtime 'v7'" in capsys.readouterr().err


def test_models_and_short_names(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "inception_v1" in out and "resnet50" in out and "(the default)" in out
    assert main(["plan", "squeezenet"]) == 0
    assert "squeezenet" in capsys.readouterr().out
    assert main(["run", "no_such_model"]) == 2
    assert "ge models" in capsys.readouterr().err


def test_missing_extras_are_named_before_any_work(monkeypatch, capsys, tmp_path):
    import ge.extras
    monkeypatch.setattr(ge.extras, "have", lambda extra: False)
    compiled = []
    monkeypatch.setattr("ge.compiler.compile", lambda *a, **k: compiled.append(1))
    for argv, extra in ((["plan", "--plot", str(tmp_path / "m.png")], "plot"),
                        (["bench", "--vs", "onnxruntime"], "bench"), (["bench", "--by-op"], "bench"),
                        (["bench", "--plot", "b.png"], "plot")):
        assert main(argv) == 2
        assert f'pip install "ge-runtime[{extra}]"' in capsys.readouterr().err
    assert not compiled


def test_trace_slices_name_op_and_node_with_shapes(tmp_path):
    import json
    path = _symbolic(tmp_path)
    assert main(["profile", path, "--trace", str(tmp_path / "t.json"), "--input-shape", "x:2,3",
                 "--repeat", "1"]) == 0
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert kernels and all(e["name"].split()[0] in ("Relu", "Add") for e in kernels)
    assert kernels[0]["args"]["inputs"][0] == "float32[2, 3]"


def test_report_is_one_self_contained_page(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", _symbolic(tmp_path), "--input-shape", "x:2,3", "-o", str(out), "--repeat", "1"]) == 0
    page = out.read_text()
    for section in ("Plan", "Memory map", "Stream timeline", "Per-op times"):
        assert f"<h2>{section}" in page
    assert "<svg" in page and "<script" not in page and "src=" not in page and "href=" not in page


def test_run_says_where_the_time_went(tmp_path, capsys):
    assert main(["run", _symbolic(tmp_path), "--input-shape", "x:2,3", "--repeat", "1"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("time"))
    for part in ("import ge", "model import", "passes", "planning", "load", "first run"):
        assert part in line

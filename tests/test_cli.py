import numpy as np
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

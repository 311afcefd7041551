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

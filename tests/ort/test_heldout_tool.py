"""tools/ort_heldout.py's own pieces: the import swap, and the testdata it rebuilds (loadable, and what the
tests that load them assert: names and types), checked on onnxruntime and ge.ort."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import onnx
import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "ort_heldout.py"
spec = importlib.util.spec_from_file_location("ort_heldout", TOOL)
heldout = importlib.util.module_from_spec(spec)
spec.loader.exec_module(heldout)


def test_only_the_imports_change():
    src = ("import onnxruntime as rt\nimport onnxruntime\nfrom onnxruntime.datasets import get_example\n"
           "import onnxruntime.backend as backend\n    from onnxruntime.capi import _pybind_state as C\n"
           "x = onnxruntime.InferenceSession  # import onnxruntime in a comment stays\n")
    assert heldout.swap_imports(src) == (
        "import ge.ort as rt\nimport ge.ort as onnxruntime\nfrom ge.ort.datasets import get_example\n"
        "import ge.ort.backend as backend\n    from ge.ort.capi import _pybind_state as C\n"
        "x = onnxruntime.InferenceSession  # import onnxruntime in a comment stays\n")


def test_rebuilt_testdata(tmp_path, rt):
    heldout.make_testdata(str(tmp_path))
    for f in tmp_path.glob("*.onnx"):
        if "external" not in f.name:   # (its data file is given from memory by the test that loads it)
            onnx.checker.check_model(onnx.load(str(f), load_external_data=False))
    sess = rt.InferenceSession(str(tmp_path / "identity_string.onnx"), providers=["CPUExecutionProvider"])
    assert [(i.name, i.type, i.shape) for i in sess.get_inputs()] == [("input:0", "tensor(string)", [2, 2])]
    sess = rt.InferenceSession(str(tmp_path / "zipmap_int64float.onnx"), providers=["CPUExecutionProvider"])
    assert sess.get_outputs()[0].type == "seq(map(int64,tensor(float)))"
    with pytest.raises(Exception):   # its initializer's data is in a file the test gives from memory
        rt.InferenceSession(str(tmp_path / "model_with_external_initializer_come_from_user.onnx"),
                            providers=["CPUExecutionProvider"])

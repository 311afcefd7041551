"""Loaded plans meet the rules compiled ones do (issue 46, items 4 and 9): an option compile refuses is
refused at load with compile's message; and the smaller typed refusals (a ragged feed, Options.from_dict
of a non-dict, a negative initializer dim)."""
import json
import re
import zipfile

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.errors import GEError, InputError, ModelLoadError
from ge.npu.aicore import CPUS
from ge.offline.format import seal
from rel_models import make_model, relu_chain, vi


@pytest.fixture(scope="module")
def gem(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("rules") / "m.gem")
    ge.save(ge.compile(relu_chain([2, 4], 2)), path)
    return path


def _resealed(src, dst, edit) -> str:
    with zipfile.ZipFile(src) as z:
        doc, npz = json.loads(z.read("plan.json")), z.read("weights.npz")
    doc.pop("digest")
    edit(doc)
    with zipfile.ZipFile(dst, "w") as z:
        z.writestr("plan.json", seal(doc))
        z.writestr("weights.npz", npz)
    return str(dst)


def _compile_message(**options) -> str:
    with pytest.raises(GEError) as e:
        ge.compile(relu_chain([2, 4], 2), options=ge.Options(**options))
    return str(e.value)


def test_one_device_plan_resealed_as_data_parallel_is_refused(gem, tmp_path):
    """It used to run and silently drop the second device's batch rows."""
    p = _resealed(gem, tmp_path / "dp.gem", lambda d: d["options"].update(parallel="data", device_count=2))
    for load in (ge.load, ge.Session):
        with pytest.raises(ModelLoadError, match=r"says parallel='data' over 2 devices, but it was not split for "
                                                 r"2 devices \(its HcomAllGather nodes: 0"):
            load(p)


def test_aicore_num_above_the_cpus_is_refused_with_compiles_message(gem, tmp_path):
    want = _compile_message(aicore_num=4096)
    p = _resealed(gem, tmp_path / "cores.gem", lambda d: d["options"].update(aicore_num=4096))
    with pytest.raises(ModelLoadError) as e:
        ge.load(p)
    assert want in str(e.value) and f"between 1 and {CPUS}" in want


def test_dynamic_batch_in_a_single_plan_is_refused_with_compiles_message(gem, tmp_path):
    want = _compile_message(dynamic_batch=(1, 2))
    p = _resealed(gem, tmp_path / "gears.gem", lambda d: d["options"].update(dynamic_batch={"__tuple__": [1, 2]}))
    with pytest.raises(ModelLoadError) as e:
        ge.load(p)
    assert want in str(e.value)


def test_a_plan_as_compiled_still_loads_and_runs(gem):
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
    with ge.Session(gem) as s:
        np.testing.assert_allclose(s.run(None, {"x": x})[0], 1 / (1 + np.exp(-np.maximum(x, 0))), rtol=1e-6)


def test_ragged_list_feed_is_an_input_error():
    with ge.Session(relu_chain([2, 2], 1), runtime="v2") as s:
        with pytest.raises(InputError, match=r"input 'x' is not an array: list"):
            s.run(None, {"x": [[1.0, 2.0], [3.0]]})
        with pytest.raises(InputError, match=r"input 'x' has dtype float64, expected float32"):
            s.run(None, {"x": [[1.0, -2.0], [-3.0, 4.0]]})   # a list numpy can read: then its dtype is checked
        np.testing.assert_array_equal(s.run(None, {"x": np.float32([[1, -2], [-3, 4]])})[0],
                                      np.float32([[1, 0], [0, 4]]))


@pytest.mark.parametrize("value", [None, 3, "ge.aicoreNum=2", [("aicore_num", 1)]])
def test_options_from_a_non_dict_is_a_ge_error(value):
    with pytest.raises(GEError, match=re.escape(f"options must be a dict of option name -> value, got "
                                                f"{type(value).__name__}")):
        ge.Options.from_dict(value)


def test_negative_initializer_dim_is_refused():
    """dims [-4] with four values was read as [4] (numpy's reshape takes any negative dim as 'the rest')."""
    w = numpy_helper.from_array(np.ones(4, np.float32), "w")
    w.dims[:] = [-4]
    model = make_model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [4])], [vi("y", None)], [w])
    with pytest.raises(ModelLoadError, match=r"tensor 'w' declares dims \[-4\]: a negative dimension"):
        ge.compile(model)
    w.dims[:] = [4]
    assert ge.compile(make_model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [4])], [vi("y", None)],
                                 [w])).tensors  # the same model with [4] compiles
    assert TensorProto.FLOAT == w.data_type

"""Options are checked by name and value; ONNX models that nest or repeat beyond ge's bounds are refused
with a typed error, found by a bounded walk."""
import pytest
from onnx import TensorProto, helper

import ge
from ge.errors import GEError, ModelLoadError


@pytest.mark.parametrize("make, match", [
    (lambda: ge.Options(topo_sort=1), r"unknown option 'topo_sort'; did you mean 'topo_sorting_mode'"),
    (lambda: ge.Options.from_dict({"ge.topoSortingMod": "2"}), r"did you mean 'ge.topoSortingMode'"),
    (lambda: ge.Session(b"", options={"topo_sort": "dfs"}), r"unknown option 'topo_sort'"),
    (lambda: ge.Options(max_streams=0), r"max_streams must be an integer in 1\.\.65536, got 0"),
    (lambda: ge.Options(device_memory_bytes=1.5), r"device_memory_bytes must be an integer"),
    (lambda: ge.Options(aicore_num=True), r"aicore_num must be an integer"),
    (lambda: ge.Options(concat_in_place="yes"), r"concat_in_place must be true or false"),
    (lambda: ge.Options(no_reuse_ops=[1, 2]), r"no_reuse_ops must be names"),
    (lambda: ge.Options.from_dict({"ge.aicoreNum": "many"}), r"ge.aicoreNum: 'many' is not a value it takes"),
])
def test_options_name_the_option(make, match):
    with pytest.raises(GEError, match=match):
        make()


def test_no_ge_option_value_is_dropped_silently():
    """A memory policy GE does not have is refused by name (it used to be kept aside and ignored)."""
    with pytest.raises(GEError, match="memoryOptimizationPolicy takes 'MemoryPriority'"):
        ge.Options.from_dict({"ge.exec.memoryOptimizationPolicy": "Other"})


def _nested(depth: int):
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    leaf = g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "leaf", [], [y])
    for k in range(depth):  # one deep branch (both deep would double the model per level: 2**depth graphs)
        g = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=g, else_branch=leaf)], f"g{k}", [],
                              [y])
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    return helper.make_model(helper.make_graph(g.node, "top", [c], [y]))


@pytest.mark.parametrize("model, match", [
    (lambda: _nested(20), r"subgraph nesting depth \(17\) is above ge's limit of 16"),
    (lambda: helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="n" * 70000)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])), r"length of node name"),
    (lambda: helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], **{f"a{k}": k for k in range(1100)})], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])), r"attribute count"),
])
def test_models_beyond_the_bounds_are_refused(model, match):
    with pytest.raises(ModelLoadError, match=match):
        ge.compile(model().SerializeToString())

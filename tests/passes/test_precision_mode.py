"""precision_mode: GE's precision modes, Before/Expected on a small Conv -> Relu -> ReduceMean -> Softmax
graph, numerics against float32, the GE option names, and bad modes / list entries."""
import numpy as np
import pytest
from pass_check import model, node, printed, randn, run_pass

import ge
from ge.errors import GEError
from ge.passes import precision_mode

W, X = randn(4, 3, 3, 3), randn(1, 3, 6, 6)
M = model([node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"]),
           node("ReduceMean", ["r"], ["m"], axes=[2, 3], keepdims=0), node("Softmax", ["m"], ["y"])],
          {"x": [1, 3, 6, 6]}, ["y"], {"w": W})


def _pass(mode, **kw):
    opts = ge.Options(precision_mode=mode, **kw)
    return run_pass(M, lambda g: precision_mode(g, opts))


def test_default_mode_changes_nothing():
    for mode in ("must_keep_origin_dtype", "force_fp32", "cube_fp16in_fp32out"):
        g, changed = _pass(mode)
        assert not changed and "Cast" not in [n.op_type for n in g.nodes]


def test_allow_mix_precision_reduces_white_and_following_gray_keeps_black():
    g, changed = _pass("allow_mix_precision")
    assert changed
    assert printed(g) == [
        "%x_float16:f16[1,3,6,6] = Cast[to=10](%x)  # x_cast",
        "%w_float16:f16[4,3,3,3] = Cast[to=10](%w)  # w_cast",
        "%c:f16[1,4,6,6] = Conv[pads=[1,1,1,1]](%x_float16, %w_float16)  # c",
        "%r:f16[1,4,6,6] = Relu(%c)  # r",
        "%r_float32:f32[1,4,6,6] = Cast[to=1](%r)  # r_cast",
        "%m:f32[1,4] = ReduceMean[axes=[2,3],keepdims=0](%r_float32)  # m",
        "%y:f32[1,4] = Softmax(%m)  # y"]


def test_force_fp16_and_allow_fp32_to_fp16_and_bf16():
    g, _ = _pass("force_fp16")
    assert [v.dtype.name for v in (g.values["m"], g.values["c"])] == ["float16", "float16"]
    assert g.outputs[0].dtype == np.float32   # the graph output keeps its type through a Cast
    g, _ = _pass("allow_fp32_to_fp16")
    assert [g.values[n].dtype.name for n in "crm"] == ["float16", "float32", "float32"]
    g, _ = _pass("allow_mix_precision_bf16")
    assert g.values["r"].dtype.name == "bfloat16"


def test_keep_dtype_and_modify_mixlist():
    g, _ = _pass("allow_mix_precision", keep_dtype=("r",))
    assert [g.values[n].dtype.name for n in "cr"] == ["float16", "float32"]
    g, _ = _pass("allow_mix_precision", keep_dtype="OpType:Conv")
    assert "Cast" not in [n.op_type for n in g.nodes]
    g, _ = _pass("allow_mix_precision", modify_mixlist={"black-list": {"to-remove": ["ReduceMean"]},
                                                       "white-list": {"to-add": ["Softmax"]}})
    assert [g.values[n].dtype.name for n in "crm"] == ["float16"] * 3


@pytest.mark.parametrize("mode", ["force_fp16", "allow_mix_precision", "allow_mix_precision_bf16"])
def test_modes_match_float32_within_their_precision(mode):
    want = ge.Session(M, runtime="v2").run(None, {"x": X})[0]
    for runtime in ("v1", "v2"):
        got = ge.Session(M, runtime=runtime, options=ge.Options(precision_mode=mode)).run(None, {"x": X})[0]
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=0.03 if mode.endswith("bf16") else 4e-3, atol=1e-3)


def test_ge_option_names():
    assert ge.Options.from_dict({"ge.exec.precision_mode": "allow_mix_precision"}).precision_mode == \
        "allow_mix_precision"
    assert ge.Options.from_dict({"precision_mode": "force_fp16"}).precision_mode == "force_fp16"
    assert ge.Options.from_dict({"ge.exec.precision_mode_v2": "mixed_bfloat16"}).precision_mode == \
        "allow_mix_precision_bf16"
    o = ge.Options.from_dict({"precision_mode": "allow_mix_precision",
                              "modify_mixlist": {"gray-list": {"to-add": ["Relu"]}}, "keep_dtype": "c,r"})
    assert o.modify_mixlist == (("gray-list", "to-add", "Relu"),) and o.keep_dtype == ("c", "r")


def test_bad_modes_and_list_entries_list_the_valid_ones():
    with pytest.raises(GEError, match="allow_mix_precision_bf16"):
        ge.Options(precision_mode="fp8")
    with pytest.raises(GEError, match="white-list, black-list, gray-list"):
        ge.Options(precision_mode="allow_mix_precision", modify_mixlist={"grey-list": {"to-add": ["Relu"]}})
    with pytest.raises(GEError, match="to-add, to-remove"):
        ge.Options(precision_mode="allow_mix_precision", modify_mixlist={"gray-list": {"add": ["Relu"]}})
    with pytest.raises(GEError, match="allow_mix_precision modes"):
        ge.Options(modify_mixlist={"gray-list": {"to-add": ["Relu"]}})
    with pytest.raises(GEError, match="'Rellu' is not an op type.*'Relu'"):
        _pass("allow_mix_precision", modify_mixlist={"gray-list": {"to-add": ["Rellu"]}})
    with pytest.raises(GEError, match="keep_dtype entry 'nope'"):
        _pass("allow_mix_precision", keep_dtype=("nope",))


def test_second_reader_of_a_cast_skips_no_node():
    """Regression: two white nodes reading one float32 value share one Cast; the second's reuse inserted no
    node but moved the sweep on by one, so the node after it (BERT's K and V head-split Reshapes) was never
    narrowed and its reader kept no Cast back (ge::Attention then met bfloat16 K and V)."""
    B = randn(6, 6)
    m = model([node("Softmax", ["x"], ["s"]), node("MatMul", ["s", "b"], ["p"]), node("MatMul", ["s", "b"], ["q"]),
               node("Relu", ["q"], ["r"]), node("Softmax", ["r"], ["y"]), node("Softmax", ["p"], ["z"])],
              {"x": [2, 6]}, ["y", "z"], {"b": B})
    g, _ = run_pass(m, lambda g: precision_mode(g, ge.Options(precision_mode="allow_mix_precision_bf16")))
    assert [g.values[n].dtype.name for n in "pqr"] == ["bfloat16"] * 3
    assert [n.op_type for n in g.values["y"].producer.inputs[0].users] == ["Softmax"]
    assert g.values["y"].producer.inputs[0].producer.op_type == "Cast"

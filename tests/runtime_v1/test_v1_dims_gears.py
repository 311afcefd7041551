"""runtime_v1 gears over any dims (Options.dynamic_dims over input_shape's -1s, GE's ge.dynamicDims /
atc --dynamic_dims): one static plan per entry, a run takes the gear its feeds' shapes match exactly (no
padding), every gear equal to runtime_v2 on the same feeds; one shared feature map of the largest gear's
size; no match is an InputError naming the gears (runtime="v1") or a runtime_v2 run (runtime="auto",
counted in stats); the gears and their dynamic plan round-trip through a .gem."""
import json
import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.compiler import compile_gears
from ge.errors import GEError, InputError, ModelLoadError
from ge.models import bert_like
from ge.offline.format import seal
from ge.plan import runs_on_v1

SEQS = "8;16"
OPTS = {"input_shape": "input_ids:1,-1", "dynamic_dims": SEQS}


def bert():
    return bert_like(batch="N", seq="seq", vocab=50, max_seq=32, layers=1)


def ids(seq, seed=0):
    return {"input_ids": np.random.default_rng(seed).integers(0, 50, (1, seq)).astype(np.int64)}


def cnn():
    """Conv 3x3 (pad 1) -> Relu -> MaxPool 2x2 over x [1, 3, H, W]: H and W symbolic."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def pair(y_dim="S"):
    """z = x + y, x [1, S] and y [1, S] sharing S (or y [1, y_dim])."""
    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "pair",
                          [vi("x", TensorProto.FLOAT, [1, "S"]), vi("y", TensorProto.FLOAT, [1, y_dim])],
                          [vi("z", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture(scope="module")
def v2():
    return ge.Session(bert(), runtime="v2")


@pytest.fixture(scope="module")
def auto():
    return ge.Session(bert(), options=OPTS)


# -- options ----------------------------------------------------------------------------------------

def test_options_take_ges_names_and_keep_the_order():
    o = ge.Options.from_dict({"ge.inputShape": "input_ids:1,-1;mask:1,-1", "ge.dynamicDims": "64,64;32,32"})
    assert o.input_shape == (("input_ids", (1, -1)), ("mask", (1, -1)))
    assert o.dynamic_dims == ((64, 64), (32, 32))   # GE does not ask for sorted entries
    assert ge.Options.from_dict({"input_shape": "x:-1", "dynamic_dims": [[2], [1]]}).dynamic_dims == ((2,), (1,))


@pytest.mark.parametrize("kw,match", [
    ({"dynamic_dims": "8;16"}, "needs input_shape with a -1"),
    ({"input_shape": "a:1,-1", "dynamic_dims": "8;16;8"}, r"dynamic_dims: entry 2 8 repeats entry 0"),
    ({"input_shape": "a:1,-1", "dynamic_dims": ";".join(map(str, range(1, 102)))}, "at most 100 gears, got 101"),
    ({"input_shape": "a:1,-1;b:-1", "dynamic_dims": "8,8;16"}, r"entry 1 16 gives 1 sizes; input_shape has 2 dims "
                                                               r"of -1 \(a\[1\], b\[0\]\)"),
    ({"input_shape": "a:1,-1", "dynamic_dims": "8;0"}, r"dynamic_dims: entry 1 .* positive integers"),
    ({"input_shape": "a:1,-1", "dynamic_dims": "8", "dynamic_batch": "1,2"}, "dynamic_dims with dynamic_batch"),
    ({"input_shape": "a:1,-2"}, "positive integers .or -1"),
])
def test_bad_options_name_the_option_and_the_entry(kw, match):
    with pytest.raises(GEError, match=match):
        ge.Options(**kw)


def test_bad_inputs_against_the_model_name_the_input_and_the_entry():
    with pytest.raises(GEError, match="input_shape names 'ids', which is not an input"):
        compile_gears(bert(), {"input_shape": "ids:1,-1", "dynamic_dims": SEQS})
    with pytest.raises(GEError, match=r"input_shape gives 'x' -1 \(dynamic\) on axis 1, where the model fixes 3"):
        compile_gears(cnn(), {"input_shape": "x:1,-1,8,-1", "dynamic_dims": "8,8"})
    with pytest.raises(GEError, match=r"dynamic_dims entry 1 \(4,8\) on input_shape's -1 dims x\[1\], y\[1\]: .*"
                                      r"symbolic dim 'S' two sizes"):
        compile_gears(pair(), {"input_shape": "x:1,-1;y:1,-1", "dynamic_dims": "4,4;4,8"})
    with pytest.raises(GEError, match=r"dynamic_dims entry 0 \(4\): .* still has shapes known only at run time"):
        compile_gears(pair(y_dim="T"), {"input_shape": "x:1,-1", "dynamic_dims": "4"})   # y's T stays dynamic
    with pytest.raises(GEError, match="one plan per gear: use"):
        ge.compile(bert(), OPTS)


# -- running ----------------------------------------------------------------------------------------

def test_bert_like_is_static_once_seq_is_bound():
    plan = ge.compile(bert(), ge.Options(input_shape="input_ids:1,16"))
    assert not plan.is_dynamic and runs_on_v1(plan)


def test_each_gear_is_runtime_v2_bit_for_bit_and_the_exact_gear_runs(auto, v2):
    assert auto.runtime == "v1" and auto.gear_plans.gears == ((8,), (16,))
    assert [i.shape for i in auto.get_inputs()] == [[1, "seq"]]
    assert [o.shape for o in auto.get_outputs()] == [[1, "seq", 64]]
    assert all(not p.is_dynamic for p in auto.gear_plans.plans.values())
    before = auto.stats()["gear_runs"]
    for seq in (16, 8):
        f = ids(seq, seed=seq)
        (got,), (want,) = auto.run(None, f), v2.run(None, f)
        assert got.shape[:2] == (1, seq)
        np.testing.assert_array_equal(got, want)
    after = auto.stats()["gear_runs"]
    assert {g: after[g] - before[g] for g in after} == {(8,): 1, (16,): 1}


def test_a_cnn_over_symbolic_h_w_gears_match_runtime_v2():
    opts = {"input_shape": "x:1,3,-1,-1", "dynamic_dims": "8,8;12,16"}
    sess, ref = ge.Session(cnn(), runtime="v1", options=opts), ge.Session(cnn(), runtime="v2")
    for h, w in ((12, 16), (8, 8)):
        x = {"x": np.random.default_rng(h).standard_normal((1, 3, h, w)).astype(np.float32)}
        (got,), (want,) = sess.run(None, x), ref.run(None, x)
        assert got.shape == (1, 4, h // 2, w // 2)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    with pytest.raises(InputError, match=r"x\[1, 3, 8, 16\] match no gear: dynamic_dims gears of x\[2\], x\[3\] "
                                         r"are 8,8; 12,16"):
        sess.run(None, {"x": np.zeros((1, 3, 8, 16), np.float32)})   # each dim is some gear's: no match


def test_a_transformers_export_runs_its_gears_on_v1():
    """BertModel as torch.onnx.export writes it (dynamic batch and sequence; three inputs sharing them): every
    -1 named, each entry its three sizes; the gears are static and equal runtime_v2 bit for bit."""
    from ge import exports
    model = exports.load("bert_tiny")
    opts = {"input_shape": "input_ids:1,-1;attention_mask:1,-1;token_type_ids:1,-1", "dynamic_dims": "8,8,8;16,16,16"}
    sess, v2 = ge.Session(model, options=opts), ge.Session(model, runtime="v2")
    assert sess.runtime == "v1" and all(not p.is_dynamic for p in sess.gear_plans.plans.values())
    for seq in (8, 16, 12):
        f = exports.bert_feeds(1, seq, vocab=100, seed=seq)
        for got, want in zip(sess.run(None, f), v2.run(None, f)):
            np.testing.assert_array_equal(got, want)
    st = sess.stats()
    assert st["gear_runs"] == {(8, 8, 8): 1, (16, 16, 16): 1} and st["v2_runs"] == 1 and st["weight_copies"] == 1


def test_v1_refuses_a_shape_between_gears_naming_them():
    sess = ge.Session(bert(), runtime="v1", options=OPTS)
    with pytest.raises(InputError, match=r"input_ids\[1, 12\] match no gear: dynamic_dims gears of "
                                         r"input_ids\[1\] are 8; 16 \(a run needs an exact match"):
        sess.run(None, ids(12))   # 16 would hold it, but a padded sequence changes attention's softmax
    assert "v2_runs" not in sess.stats() and sess.run(None, ids(8))[0].shape[1] == 8


def test_auto_runs_other_shapes_on_runtime_v2_and_says_so(auto, v2):
    before = auto.stats()
    for seq in (12, 20):
        (got,), (want,) = auto.run(None, ids(seq, 3)), v2.run(None, ids(seq, 3))
        np.testing.assert_array_equal(got, want)
    st = auto.stats()
    assert st["v2_runs"] - before["v2_runs"] == 2 and st["gear_runs"] == before["gear_runs"]
    assert st["runs"] == sum(st["gear_runs"].values()) + st["v2_runs"] and "v2" in st


def test_the_gears_share_one_feature_map_of_the_largest_gears_size(auto):
    st = auto.stats()
    per_gear = st["feature_map_bytes_per_gear"]
    assert st["feature_map_bytes"] == max(per_gear.values()) < sum(per_gear.values())
    (s,) = auto._executor._gears._sets.all
    assert all(e._instances.all[0].fm is s.fm for e in s.executors.values())
    # the position embeddings fold per length, yet one weight image holds every gear (gear_weights.py)
    own = [sum(a.nbytes for a in p.constants.values()) for p in auto.gear_plans.plans.values()]
    assert st["weight_copies"] == 1 and max(own) <= st["weights_bytes"] < sum(own) * 0.6


def test_the_split_feature_map_serves_dims_gears(auto):
    """GE's gear-memory split (gear_memory_split_bytes; 400 MiB under ge.exec.staticMemoryPolicy=2) cuts the
    dims gears' shared feature map into pieces, as the batch gears'; the results stay bit for bit."""
    sess = ge.Session(bert(), runtime="v1", options={**OPTS, "gear_memory_split_bytes": 16 << 10})
    st = sess.stats()
    assert len(st["feature_map_pieces"]) > 1
    for seq in (8, 16):
        np.testing.assert_array_equal(sess.run(None, ids(seq, 7))[0], auto.run(None, ids(seq, 7))[0])


# -- offline and the CLI ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gem(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("dims") / "bert.gem") + "/"   # a directory: its plan.json edited below
    return ge.offline.save_gears(compile_gears(bert(), OPTS, fallback=True), path)


def test_gears_round_trip_through_a_gem(gem, auto, v2):
    loaded = ge.load(gem)
    assert loaded.gears == ((8,), (16,)) and loaded.dims == (("input_ids", 1),)
    assert loaded.fallback is not None and loaded.fallback.is_dynamic
    sess = ge.Session(gem)   # auto: the gears on v1, other shapes on v2
    assert sess.runtime == "v1"
    for seq in (8, 16, 12):
        np.testing.assert_array_equal(sess.run(None, ids(seq, 5))[0], auto.run(None, ids(seq, 5))[0])
    assert sess.stats()["gear_runs"] == {(8,): 1, (16,): 1} and sess.stats()["v2_runs"] == 1
    with pytest.raises(InputError, match="match no gear"):
        ge.Session(gem, runtime="v1").run(None, ids(12))
    on_v2 = ge.Session(gem, runtime="v2")   # the saved dynamic plan
    assert on_v2.runtime == "v2"
    np.testing.assert_array_equal(on_v2.run(None, ids(12, 5))[0], v2.run(None, ids(12, 5))[0])


def test_gears_without_their_dynamic_plan_refuse_runtime_v2():
    gp = compile_gears(cnn(), {"input_shape": "x:1,3,-1,-1", "dynamic_dims": "8,8"})
    assert gp.fallback is None
    with pytest.raises(GEError, match="hold no dynamic plan for runtime_v2"):
        ge.Session(gp, runtime="v2")
    assert ge.Session(gp).run(None, {"x": np.ones((1, 3, 8, 8), np.float32)})[0].shape == (1, 4, 4, 4)
    with pytest.raises(InputError, match="match no gear"):   # auto without a dynamic plan: as runtime="v1"
        ge.Session(gp).run(None, {"x": np.ones((1, 3, 8, 10), np.float32)})


def _edited(gem, tmp_path, edit):
    out = tmp_path / "m.gem"
    shutil.copytree(gem, out)
    doc = json.loads((out / "plan.json").read_text())
    doc.pop("digest")
    edit(doc)
    (out / "plan.json").write_text(seal(doc))
    return str(out)


@pytest.mark.parametrize("edit,match", [
    (lambda d: d.__setitem__("dims", [["ids", 1]]), r"dims\[0\]: ids\[1\] is not a dim of an input"),
    (lambda d: d["plans"].__setitem__("8,8", d["plans"].pop("8")), r"a gear is 1 positive sizes"),
    (lambda d: d["plans"].__setitem__("12", d["plans"].pop("8")), r"plans\[12\]: its inputs are \[\[1, 8\]\]"),
    (lambda d: d.__setitem__("version", 5), "reads versions 2-4"),
])
def test_a_resealed_bad_gears_document_is_refused(gem, tmp_path, edit, match):
    with pytest.raises(ModelLoadError, match=match):
        ge.load(_edited(gem, tmp_path, edit))


def test_ge_compile_and_run_dynamic_dims(tmp_path, capsys):
    from ge.cli import main
    model = tmp_path / "cnn.onnx"
    model.write_bytes(cnn().SerializeToString())
    out = str(tmp_path / "cnn.gem")
    assert main(["compile", str(model), "-o", out, "--input-shape", "x:1,3,-1,-1", "--dynamic-dims", "8,8;12,16"]) == 0
    assert "gears 8,8; 12,16 of x[2], x[3]" in capsys.readouterr().out
    assert main(["run", out, "--repeat", "1"]) == 0
    text = capsys.readouterr().out
    assert "runtime   v1" in text and "gears     runs per gear 8,8: 0, 12,16: 2; runtime_v2 runs 0" in text

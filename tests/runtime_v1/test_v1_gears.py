"""runtime_v1 batch gears (Options.dynamic_batch, GE's ge.dynamicBatchSize): one static plan per gear, the
smallest gear >= the batch runs (inputs zero-padded, batched outputs sliced back), one feature map of the
largest gear's size and one copy of the weights shared by all gears, safe under concurrent runs."""

import dataclasses

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.compiler import compile_gears
from ge.errors import GEError, InputError
from ge.models import bert_like, with_symbolic_dims
from ge.zoo import with_random_weights
from v1_models import mlp
from hammer import hammer

GEARS = [1, 2, 4, 8]
RNG = np.random.default_rng(0)
W = RNG.standard_normal((4, 3)).astype(np.float32)


def two_inputs(y_batch="N"):
    """out = Relu(x @ W + y) [N, 3], sq = x * x [N, 4], w2 = 2 W [4, 3] (not batched, though 4 is a gear)."""
    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "y"], ["a"]),
             helper.make_node("Relu", ["a"], ["out"]), helper.make_node("Mul", ["x", "x"], ["sq"]),
             helper.make_node("Mul", ["W", "two"], ["w2"])]
    inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(np.array(2, np.float32), "two")]
    g = helper.make_graph(nodes, "two_inputs", [vi("x", TensorProto.FLOAT, ["N", 4]),
                                                 vi("y", TensorProto.FLOAT, [y_batch, 3])],
                          [vi("out", TensorProto.FLOAT, None), vi("sq", TensorProto.FLOAT, None),
                           vi("w2", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def reference(x, y):
    return [np.maximum(x @ W + y, 0), x * x, 2 * W]


def feeds(batch, seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((batch, 4)).astype(np.float32),
            "y": rng.standard_normal((batch, 3)).astype(np.float32)}


@pytest.fixture(scope="module")
def sess():
    return ge.Session(two_inputs(), runtime="v1", options={"dynamic_batch": GEARS})


def test_options_accept_ge_names_and_normalise():
    assert ge.Options.from_dict({"ge.dynamicBatchSize": "8,1,4,2"}).dynamic_batch == (1, 2, 4, 8)
    assert ge.Options.from_dict({"dynamic_batch_size": " 1, 2 ,4,"}).dynamic_batch == (1, 2, 4)
    assert ge.Options(dynamic_batch=[4, 1]).dynamic_batch == (1, 4)
    assert ge.Options(dynamic_batch=8).dynamic_batch == (8,)
    assert ge.Options().dynamic_batch == ()
    for bad, match in [("0,2", "positive"), ("1,x", "positive"), ([2.5], "positive"), ("1,2,1", "repeat"),
                       (list(range(1, 102)), "at most 100")]:
        with pytest.raises(GEError, match=match):
            ge.Options(dynamic_batch=bad)


@pytest.mark.parametrize("batch,gear", [(1, 1), (3, 4), (8, 8), (5, 8), (2, 2)])
def test_smallest_gear_runs_and_outputs_match_the_reference(sess, batch, gear):
    before = sess._executor.stats()["gear_runs"]
    f = feeds(batch, seed=batch)
    got = sess.run(None, f)
    for g, w in zip(got, reference(f["x"], f["y"])):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    after = sess._executor.stats()["gear_runs"]
    assert {k: after[k] - before[k] for k in after} == {g: int(g == gear) for g in GEARS}


def test_session_describes_the_symbolic_batch(sess):
    assert sess.runtime == "v1"
    assert [i.shape for i in sess.get_inputs()] == [["N", 4], ["N", 3]]
    assert [o.shape for o in sess.get_outputs()] == [["N", 3], ["N", 4], [4, 3]]
    assert sess.gear_plans.gears == tuple(GEARS)
    assert all(not p.is_dynamic for p in sess.gear_plans.plans.values())


def test_auto_picks_v1_with_gears_and_v2_runs_the_real_batch():
    assert ge.Session(two_inputs(), options={"dynamic_batch": "1,4"}).runtime == "v1"
    v2 = ge.Session(two_inputs(), runtime="v2", options={"ge.dynamicBatchSize": "1,4"})
    assert v2.runtime == "v2" and v2.gear_plans is None and v2.plan.is_dynamic
    f = feeds(3)
    for g, w in zip(v2.run(None, f), reference(f["x"], f["y"])):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_feature_map_is_shared_and_weights_are_loaded_once(sess):
    ex = sess._executor
    per_gear = ex.stats()["feature_map_bytes_per_gear"]
    assert ex.stats()["sets"] == 1
    assert ex.stats()["feature_map_bytes"] == max(per_gear.values()) < sum(per_gear.values())
    (s,) = ex._sets.all
    for gear_ex in s.executors.values():  # every gear computes in the one buffer; its arena has none
        (inst,) = gear_ex._instances.all
        assert inst.fm is s.fm
        assert not np.shares_memory(inst.arena, s.fm)
        assert inst.weights is ex._images[0].buf
    assert ex.stats()["weight_copies"] == 1


def test_squeezenet_gears_match_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    model = with_symbolic_dims(with_random_weights("squeezenet"), {"data_0": {0: "N"}})
    sess = ge.Session(model, runtime="v1", options={"dynamic_batch": GEARS})
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    ref = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    for batch in (1, 3, 8):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype(np.float32)
        (got,), (want,) = sess.run(None, {"data_0": x}), ref.run(None, {"data_0": x})
        assert got.shape == want.shape == (batch, 1000, 1, 1)
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)
    st = sess._executor.stats()
    assert st["gear_runs"] == {1: 1, 2: 0, 4: 1, 8: 1} and st["padded_runs"] == 1
    per_gear = st["feature_map_bytes_per_gear"]
    assert st["feature_map_bytes"] == max(per_gear.values()) and st["weight_copies"] == 1


def test_batch_dependent_constants_share_one_weight_image():
    """Reshape(x, [Shape(x)[0], -1]): folding makes the shape a constant that differs per gear. compile_gears
    lays the gears' constants out as one image (ge/memory/gear_weights.py): one copy; plans laid out alone
    (gears saved before that layout) get a copy each where their constants differ."""
    vi, arr = helper.make_tensor_value_info, numpy_helper.from_array
    inits = [arr(np.array([-1], np.int64), "m1"), arr(np.array([0], np.int64), "z"),
             arr(np.array([1], np.int64), "o"), arr(np.arange(6, dtype=np.float32), "b")]
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Slice", ["s", "z", "o"], ["n"]),
             helper.make_node("Concat", ["n", "m1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Add", ["r", "b"], ["y"])]
    m = helper.make_model(helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, ["N", 2, 3])],
                                            [vi("y", TensorProto.FLOAT, None)], inits),
                          opset_imports=[helper.make_opsetid("", 13)])
    sess = ge.Session(m, runtime="v1", options={"dynamic_batch": [1, 2, 4]})
    assert sess._executor.stats()["weight_copies"] == 1
    x = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    for g in (1, 2, 3, 4):
        np.testing.assert_allclose(sess.run(None, {"x": x[:g]})[0], x[:g].reshape(g, 6) + np.arange(6), rtol=1e-6)
    x = x[:3]
    gp = sess.gear_plans
    alone = {g: ge.compile(m, {"input_shape": {"x": [g, 2, 3]}}) for g in gp.gears}
    import runtime_v1
    ex = runtime_v1.load(dataclasses.replace(gp, plans=alone))
    assert ex.stats()["weight_copies"] == 3
    np.testing.assert_allclose(ex.run({gp.inputs[0].index: x})[0], x.reshape(3, 6) + np.arange(6), rtol=1e-6)


def test_batch_past_the_largest_gear_is_refused(sess):
    with pytest.raises(InputError, match=r"batch 9 .*gears are \[1, 2, 4, 8\]"):
        sess.run(None, feeds(9))
    assert sess.run(None, feeds(2))[0].shape == (2, 3)  # still usable


def test_inputs_disagreeing_on_the_batch_are_refused(sess):
    f = feeds(3)
    f["y"] = f["y"][:2]
    with pytest.raises(InputError, match="input 'y'"):
        sess.run(None, f)
    ex = sess._executor  # the executor checks on its own too (callers without a Session)
    x, y = (sess.gear_plans.inputs[k].index for k in range(2))
    with pytest.raises(InputError, match=r"input 'y' has batch 2 .* input 'x' has batch 3"):
        ex.run({x: feeds(3)["x"], y: feeds(2)["y"]})


def test_models_without_one_symbolic_batch_are_refused():
    model, _ = mlp()  # static: x [2, 8]
    with pytest.raises(GEError, match="no input has one"):
        ge.Session(model, runtime="v1", options={"dynamic_batch": GEARS})
    with pytest.raises(GEError, match="disagree"):
        ge.Session(two_inputs(y_batch="M"), runtime="v1", options={"dynamic_batch": GEARS})
    with pytest.raises(GEError, match="runtime='v2'"):  # other dynamic dims stay runtime_v2's
        ge.Session(bert_like(batch="N", seq="seq", vocab=50, max_seq=32, layers=1), runtime="v1",
                   options={"dynamic_batch": [1, 2]})


def test_a_single_plan_cannot_hold_gears(tmp_path):
    with pytest.raises(GEError, match="compile_gears"):
        ge.compile(two_inputs(), {"dynamic_batch": GEARS})
    plan = ge.compile(two_inputs())
    with pytest.raises(GEError, match="one plan per gear"):
        ge.Session(plan, options={"dynamic_batch": GEARS})
    ge.save(plan, tmp_path / "one.gem")
    with pytest.raises(GEError, match="one plan per gear"):
        ge.Session(str(tmp_path / "one.gem"), options={"dynamic_batch": GEARS})
    gp = compile_gears(two_inputs(), {"dynamic_batch": [2, 4]})
    assert gp.symbol == "N" and gp.batched == (True, True, False)


def test_gears_saved_once_load_without_compiling(tmp_path):
    model = with_symbolic_dims(with_random_weights("squeezenet"), {"data_0": {0: "N"}})
    gp = compile_gears(model, {"dynamic_batch": [1, 2, 4]})
    path = ge.offline.save_gears(gp, tmp_path / "sq.gem")
    loaded = ge.load(path)
    assert loaded.gears == (1, 2, 4) and loaded.symbol == "N" and loaded.batched == gp.batched
    assert [t.name for t in loaded.inputs] == ["data_0"] and loaded.inputs[0].shape[0] == "N"
    weights = sum(a.nbytes for a in gp.plans[1].constants.values())
    assert (tmp_path / "sq.gem").stat().st_size < 1.5 * weights  # the gears' weights are stored once
    x = np.random.default_rng(0).standard_normal((3, 3, 224, 224)).astype(np.float32)
    want = ge.Session(model, runtime="v1", options={"dynamic_batch": [1, 2, 4]}).run(None, {"data_0": x})
    sess = ge.Session(path)  # auto: v1 over the saved gears
    assert sess.runtime == "v1" and sess.gear_plans.gears == (1, 2, 4)
    np.testing.assert_array_equal(sess.run(None, {"data_0": x})[0], want[0])
    with pytest.raises(GEError, match="runtime_v1"):
        ge.Session(path, runtime="v2")


def test_ge_compile_dynamic_batch_writes_gears(tmp_path, capsys):
    from ge.cli import main
    model = tmp_path / "two.onnx"
    model.write_bytes(two_inputs().SerializeToString())
    assert main(["compile", str(model), "-o", str(tmp_path / "two.gem"), "--dynamic-batch", "1,4"]) == 0
    assert "gears [1, 4] of batch 'N'" in capsys.readouterr().out
    sess = ge.Session(str(tmp_path / "two.gem"))
    got = sess.run(None, feeds(3))
    for g, w in zip(got, reference(**feeds(3))):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_bound_outputs(sess):
    for batch in (3, 4):  # padded (copied into the buffer) and exactly a gear (computed in place)
        f = feeds(batch)
        buf = np.empty((batch, 3), np.float32)
        (out,) = sess.run(["out"], f, outputs={"out": buf})
        assert out is buf
        np.testing.assert_allclose(buf, reference(f["x"], f["y"])[0], rtol=1e-5, atol=1e-6)


def test_eight_threads_with_different_batches_match_serial_runs():
    sess = ge.Session(two_inputs(), runtime="v1", options={"dynamic_batch": GEARS, "executor_instances": 3})
    work = [feeds(b, seed=b) for b in range(1, 9)]
    expected = [sess.run(None, f) for f in work]
    errors = hammer(lambda f: sess.run(None, f), work, expected, 25)
    assert not errors, errors[:5]
    st = sess._executor.stats()
    assert st["runs"] == len(work) * 26 and 1 <= st["sets"] <= 3
    assert st["feature_map_bytes"] == st["sets"] * max(st["feature_map_bytes_per_gear"].values())
    sess.close()
    with pytest.raises(GEError, match="closed"):
        sess.run(None, work[0])


def test_refreshable_feature_map_is_rebound_for_every_gear():
    sess = ge.Session(two_inputs(), runtime="v1",
                      options={"dynamic_batch": GEARS, "ge.featureBaseRefreshable": "1"})
    ex = sess._executor
    buf = np.zeros(max(ex.feature_memory_size, 1), np.uint8)
    ex.update_feature_memory_base(buf)
    assert all(np.shares_memory(e._instances.all[0].fm, buf) for e in ex._sets.all[0].executors.values())
    f = feeds(3)
    for g, w in zip(sess.run(None, f), reference(f["x"], f["y"])):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)

"""HCCL in one process: the collectives on the shared-memory engine against numpy, the Hcom ops through
Session on both runtimes (each device fed its slice: Options.parallel="data"), data parallel equal to one
device, and the faults: a failed or late device, bad attributes, groups, options, mpi4py missing."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import ge
from ge.errors import ExecutionError, GEError, ShapeError
from ge.hccl.check import check_plans
from ge.hccl.shm import SharedWorld

from hccl_models import feed, mlp, one_op

DP2 = ge.Options(parallel="data", device_count=2)


def on_devices(world, fn):
    """fn(end) on every device of `world`, each on its own thread; the results by rank."""
    out = [None] * world.size

    def device(end):
        out[end.rank] = fn(end)
    threads = [threading.Thread(target=device, args=(e,)) for e in world.ends]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


@pytest.mark.parametrize("reduction", ["sum", "prod", "max", "min"])
def test_transport_collectives(reduction):
    world = SharedWorld(3, timeout=10)
    xs = [np.arange(6, dtype=np.float32) * (r + 1) - r for r in range(3)]
    op = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[reduction]

    def collectives(end):
        x, r = xs[end.rank], {}
        r["gather"] = np.empty(18, np.float32)
        end.all_gather(x, r["gather"])
        r["reduce"] = np.empty(6, np.float32)
        end.all_reduce(x, r["reduce"], reduction)
        r["scatter"] = np.empty(2, np.float32)
        end.reduce_scatter(x, r["scatter"], reduction)
        r["bcast"] = np.empty(6, np.float32)
        end.broadcast(x, r["bcast"], 2)
        return r
    got = on_devices(world, collectives)
    full = op(np.stack(xs), axis=0)
    for rank, r in enumerate(got):
        np.testing.assert_array_equal(r["gather"], np.concatenate(xs))
        np.testing.assert_array_equal(r["reduce"], full)
        np.testing.assert_array_equal(r["scatter"], full[2 * rank:2 * rank + 2])
        np.testing.assert_array_equal(r["bcast"], xs[2])


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_hcom_ops_in_a_session(runtime):
    """Each device gets its half of x; a collective's per-device result is gathered on axis 0 (data parallel)."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6) - 7
    halves = x[:2], x[2:]
    cases = [("HcomAllReduce", {"reduction": "sum"}, np.tile(halves[0] + halves[1], (2, 1))),
             ("HcomAllReduce", {"reduction": "max"}, np.tile(np.maximum(*halves), (2, 1))),
             ("HcomReduceScatter", {"reduction": "sum", "rank_size": 2}, halves[0] + halves[1]),
             ("HcomBroadcast", {"root_rank": 1}, np.tile(halves[1], (2, 1))),
             ("HcomAllGather", {"rank_size": 2}, np.tile(x, (2, 1)))]   # each device: x whole
    for op, attrs, want in cases:
        s = ge.Session(one_op(op, [4, 6], **attrs), runtime=runtime, options=DP2)
        assert s.runtime == runtime and s.plan.nodes[0].engine == "HCCL"
        np.testing.assert_array_equal(s.run(None, {"x0": x})[0], want, err_msg=op)


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_data_parallel_equals_one_device(runtime):
    x = feed()
    ref = ge.Session(mlp(), runtime=runtime).run(None, {"x": x})[0]
    s = ge.Session(mlp(), runtime=runtime, options=DP2)
    assert s.get_inputs()[0].shape == [4, 16]              # the caller feeds the whole batch
    gathers = [n for n in s.plan.nodes if n.op_type == "HcomAllGather"]
    assert len(gathers) == 1 and gathers[0].stream != s.plan.nodes[0].stream and s.plan.events
    np.testing.assert_array_equal(s.run(None, {"x": x})[0], ref)
    assert s.stats()["devices"] == 2


def test_bad_attributes_and_groups():
    with pytest.raises(ShapeError, match="reduction 'avg' is not one of sum"):
        ge.compile(one_op("HcomAllReduce", [4, 6], reduction="avg"))
    with pytest.raises(ShapeError, match="group 'tp_group' is not known"):
        ge.compile(one_op("HcomAllReduce", [4, 6], group="tp_group"))
    with pytest.raises(ShapeError, match="does not split into rank_size 4"):
        ge.compile(one_op("HcomReduceScatter", [6, 2], rank_size=4))
    with pytest.raises(ShapeError, match="fusion 3 is not GE's"):
        ge.compile(one_op("HcomAllReduce", [4, 6], fusion=3))
    with pytest.raises(GEError, match="compiled for rank_size 3, its group has 2 ranks"):
        ge.Session(one_op("HcomAllGather", [4, 6], rank_size=3), options=ge.Options(device_count=2))


def test_bad_options():
    with pytest.raises(GEError, match="device_id 2 is outside the 2 devices"):
        ge.Session(mlp(), options=ge.Options(device_id=2, device_count=2))
    with pytest.raises(GEError, match="option parallel must be one of"):
        ge.Options(parallel="pipeline")
    with pytest.raises(GEError, match="batch 3, which does not split into 2"):
        ge.Session(mlp(batch=3), options=DP2)
    with pytest.raises(GEError, match="hccl_timeout"):
        ge.Options(hccl_timeout=0)


def test_a_failed_device_is_raised_and_its_peer_stops_waiting():
    s = ge.Session(mlp(), runtime="v2", options=DP2.replace(hccl_timeout=30))
    broken = s._executor.executors[1]

    def fail(feeds, outputs=None):
        raise ExecutionError("device 1 lost its power")
    broken.run = fail
    t0 = time.monotonic()
    with pytest.raises(ExecutionError, match="lost its power"):
        s.run(None, {"x": feed()})
    assert time.monotonic() - t0 < 10   # not the 30 s timeout: the peer was told


def test_a_late_device_is_named_within_the_timeout():
    s = ge.Session(mlp(), runtime="v2", options=DP2.replace(hccl_timeout=0.3))
    late, run = s._executor.executors[1], s._executor.executors[1].run
    late.run = lambda feeds, outputs=None: (time.sleep(1.0), run(feeds))[1]
    t0 = time.monotonic()
    with pytest.raises(ExecutionError, match="rank 1 did not answer rank 0 within 0.3 s"):
        s.run(None, {"x": feed()})
    assert time.monotonic() - t0 < 5
    with pytest.raises(ExecutionError, match="did not answer"):   # the group stays broken
        s.run(None, {"x": feed()})


def test_mismatched_plans_are_refused():
    world = SharedWorld(2, timeout=10)
    plans = [ge.compile(mlp(seed=0)), ge.compile(mlp(seed=1))]

    def check(end):
        try:
            check_plans(end, plans[end.rank])
        except GEError as e:
            return str(e)
    got = on_devices(world, check)
    assert all("rank 1 loaded another plan than rank 0" in g for g in got)
    same = on_devices(SharedWorld(2, timeout=10), lambda end: check_plans(end, plans[0]))
    assert same == [None, None]


def test_missing_mpi4py_names_the_extra(monkeypatch):
    import ge.extras
    from ge.hccl import mpi
    monkeypatch.setattr(ge.extras, "have", lambda extra: extra != "dist")
    monkeypatch.setattr(mpi, "require", ge.extras.require)
    with pytest.raises(ge.extras.MissingExtraError, match=r'pip install "ge-runtime\[dist\]"'):
        mpi.world_comm()


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_tensor_parallel_bert_like(runtime):
    """Megatron splits of a small encoder: outputs within 1e-5 of one device, about half the weights each."""
    from ge.models import bert_like
    m = bert_like(layers=2, hidden=64, heads=4, batch=1, seq=16, vocab=100, max_seq=32)
    ids = np.random.default_rng(0).integers(0, 100, (1, 16)).astype(np.int64)
    one = ge.Session(m, runtime=runtime)
    s = ge.Session(m, runtime=runtime, options=ge.Options(parallel="tensor", device_count=2))
    np.testing.assert_allclose(s.run(None, {"input_ids": ids})[0], one.run(None, {"input_ids": ids})[0],
                               rtol=0, atol=1e-5)
    reduces = [n for n in s.plan.nodes if n.op_type == "HcomAllReduce"]
    assert len(reduces) == 4 and {n.engine for n in reduces} == {"HCCL"}   # attention-out, FFN-down per layer
    full = sum(a.nbytes for a in one.plan.constants.values())
    split = [sum(a.nbytes for a in ex.plan.constants.values()) for ex in s._executor.executors]
    layer = full - sum(a.nbytes for k, a in one.plan.constants.items()
                       if "embeddings" in one.plan.tensors[k].name)
    assert split[0] == split[1] and split[0] < full - 0.45 * layer


def test_tensor_parallel_needs_a_block():
    """No row MatMul (mlp), or a Softmax over the columns a rank would hold: nothing is split."""
    from onnx import TensorProto, helper, numpy_helper
    with pytest.raises(GEError, match="found no transformer block to split"):
        ge.Session(mlp(), options=ge.Options(parallel="tensor", device_count=2))
    w = [numpy_helper.from_array(np.eye(8, dtype=np.float32), n) for n in ("W1", "W2")]
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W1"], ["h"]),
                           helper.make_node("Softmax", ["h"], ["p"], axis=-1),
                           helper.make_node("MatMul", ["p", "W2"], ["y"])], "softmax_across",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], w)
    with pytest.raises(GEError, match="found no transformer block to split"):
        ge.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
                   ge.Options(parallel="tensor", device_count=2))


def test_tensor_parallel_with_run_time_shapes():
    """Symbolic batch and sequence: the collectives are dynamic nodes of runtime_v2, prepared per shape."""
    from ge.models import bert_like
    m = bert_like(layers=1, hidden=64, heads=4, vocab=100, max_seq=32)
    s = ge.Session(m, options=ge.Options(parallel="tensor", device_count=2))
    assert s.runtime == "v2" and all(n.is_dynamic for n in s.plan.nodes if n.op_type == "HcomAllReduce")
    one = ge.Session(m, runtime="v2")
    for shape in [(2, 9), (1, 5)]:
        ids = np.random.default_rng(0).integers(0, 100, shape).astype(np.int64)
        np.testing.assert_allclose(s.run(None, {"input_ids": ids})[0], one.run(None, {"input_ids": ids})[0],
                                   rtol=0, atol=1e-5)


def test_cli_data_parallel_and_gem(tmp_path, capsys):
    """`ge compile --data-parallel 2` then `ge run F.gem`: the saved plan runs on 2 devices of this process;
    its checksum is the one-device run's."""
    import onnx
    from ge.cli import main
    onnx.save(mlp(), tmp_path / "mlp.onnx")
    assert main(["run", str(tmp_path / "mlp.onnx"), "--repeat", "1"]) == 0
    one = [s for s in capsys.readouterr().out.splitlines() if s.startswith("output")]
    assert main(["compile", str(tmp_path / "mlp.onnx"), "--data-parallel", "2", "-o", str(tmp_path / "m.gem")]) == 0
    assert main(["run", str(tmp_path / "m.gem"), "--repeat", "1"]) == 0
    assert [s for s in capsys.readouterr().out.splitlines() if s.startswith("output")] == one
    assert main(["run", str(tmp_path / "mlp.onnx"), "--data-parallel", "2", "--tensor-parallel", "2"]) == 2
    assert "choose one" in capsys.readouterr().err

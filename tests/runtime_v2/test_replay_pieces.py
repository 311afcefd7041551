"""Replays of plans that hold a static piece (runtime_v2/replay.py piece rows, runtime_v2/sunk.py): the recorded
table stops at the piece, runs its runtime_v1 tables natively on the buffers the recording found, and goes on.

Oracle: the same model with replays off (capture_limit 0, host-driven), bitwise; numpy for the values."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper as h

import ge
from ge.errors import ExecutionError
from ge.plan import sunk_plan
from runtime_v2.sunk import SunkNode


def _chain(x, tag, n=2):
    """n x (Mul by 0.5, Relu): 2n tasks, static when x is."""
    nodes = []
    for k in range(n):
        nodes += [h.make_node("Mul", [x, "half"], [f"{tag}m{k}"], name=f"{tag}m{k}"),
                  h.make_node("Relu", [f"{tag}m{k}"], [f"{tag}r{k}"], name=f"{tag}r{k}")]
        x = f"{tag}r{k}"
    return nodes, x


def _model():
    """Piece A on the fixed input x (its output also a graph output), a dynamic Add with v [N, 8] and a ReduceSum
    over N (host-driven: their shapes follow N), then piece B on the reduced row (its output the graph's y)."""
    a, a_out = _chain("x", "a")
    b, y = _chain("red", "b")
    nodes = a + [h.make_node("Add", ["v", a_out], ["s"], name="add"),
                 h.make_node("ReduceSum", ["s", "axes"], ["red"], name="sum", keepdims=1)] + b
    g = h.make_graph(nodes, "pieces", [h.make_tensor_value_info("x", T.FLOAT, [1, 8]),
                                       h.make_tensor_value_info("v", T.FLOAT, ["N", 8])],
                     [h.make_tensor_value_info(a_out, T.FLOAT, [1, 8]), h.make_tensor_value_info(y, T.FLOAT, [1, 8])],
                     [onnx.numpy_helper.from_array(np.array(0.5, np.float32), "half"),
                      onnx.numpy_helper.from_array(np.array([0], np.int64), "axes")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def sessions():
    model = _model()
    return ge.Session(model, runtime="v2"), ge.Session(model, runtime="v2", options={"capture_limit": 0})


def _feeds(n, seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((1, 8)).astype(np.float32), "v": rng.standard_normal((n, 8)).astype(np.float32)}


def test_a_plan_with_pieces_replays_bitwise_equal_to_host_driven(sessions):
    on, off = sessions
    assert [n.op_type for n in on.plan.nodes if sunk_plan(n) is not None] == ["PartitionedCall"] * 2
    how = []
    for k, n in enumerate((3, 3, 3, 5, 5, 5, 3)):   # other data each run: the pieces read this run's buffers
        f = _feeds(n, k)
        got, want = on.run(None, f), off.run(None, f)
        how.append(on.stats()["last_run"])
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype and np.array_equal(g, w)
        a = np.maximum(np.maximum(f["x"] * 0.5, 0) * 0.5, 0)
        np.testing.assert_allclose(got[0], a, rtol=1e-6)
        red = (f["v"] + a).sum(0, keepdims=True)
        np.testing.assert_allclose(got[1], np.maximum(np.maximum(red * 0.5, 0) * 0.5, 0), rtol=1e-5, atol=1e-6)
    assert how == ["host", "recorded", "replayed", "host", "recorded", "replayed", "replayed"]
    st = on.stats()
    assert st["replayed_runs"] == 3 and st["replay_fallbacks"] == 0 and st["replay_refused"] == {}


def test_replayed_piece_outputs_are_the_callers(sessions):
    """A piece's graph output is a fresh array per replay: a result handed out is never written again."""
    on, _ = sessions
    for k in range(3):
        on.run(None, _feeds(4, 10 + k))
    first = on.run(None, _feeds(4, 20))
    kept = [a.copy() for a in first]
    on.run(None, _feeds(4, 21))
    assert on.stats()["last_run"] == "replayed"
    assert all(np.array_equal(a, b) for a, b in zip(first, kept))


def test_a_piece_that_fails_in_a_replay_runs_host_driven_and_names_the_node(sessions, monkeypatch):
    on, _ = sessions
    for k in range(3):
        on.run(None, _feeds(6, 30 + k))
    assert on.stats()["last_run"] == "replayed"
    before = on.stats()["replay_fallbacks"]

    def broken(self, ins, outs):
        raise RuntimeError("piece broke")
    monkeypatch.setattr(SunkNode, "run", broken)
    with pytest.raises(ExecutionError, match="PartitionedCall node 'PartitionedCall_am0.*piece broke"):
        on.run(None, _feeds(6, 40))
    assert on.stats()["replay_fallbacks"] == before + 1
    monkeypatch.undo()
    assert np.array_equal(on.run(None, _feeds(6, 41))[1], sessions[1].run(None, _feeds(6, 41))[1])

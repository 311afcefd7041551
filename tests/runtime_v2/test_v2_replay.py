"""runtime_v2 replays (runtime_v2/replay.py): a shape's second run records, later runs replay a native table.

Oracle: the same model on a session with replays off (capture_limit 0), host-driven, bitwise; and the
committed exports' PyTorch eager outputs."""
import sys
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper as h

import ge
from ge import exports
from ge.errors import ExecutionError, GEError
from ge.models import bert_like
from ge.plan import aligned_empty
from hammer import hammer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "control"))
from test_control_flow import _loop_model  # noqa: E402


def _pair(model, **opts):
    return (ge.Session(model, runtime="v2", options=opts),
            ge.Session(model, runtime="v2", options=dict(opts, capture_limit=0)))


def _runs(on, off, feeds, times=3) -> list[str]:
    """Runs `times` of each feed dict on `on`, each bitwise equal to `off`'s; how each ran."""
    how = []
    for f in feeds:
        want = off.run(None, f)
        for _ in range(times):
            got = on.run(None, f)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.shape == w.shape and g.dtype == w.dtype and np.array_equal(g, w)
            how.append(on.stats()["last_run"])
    return how


def test_bert_like_symbolic_sequence_replays_bitwise():
    on, off = _pair(bert_like(batch=1, vocab=100, max_seq=64))
    rng = np.random.default_rng(0)
    feeds = [{"input_ids": rng.integers(0, 100, (1, n)).astype(np.int64)} for n in (8, 13, 8)]
    assert _runs(on, off, feeds) == ["host", "recorded", "replayed"] * 2 + ["replayed"] * 3
    st = on.stats()
    assert st["replays"] and st["recorded_shapes"] == 2 and st["replayed_runs"] == 5 and st["replay_arena_bytes"] > 0
    assert off.stats()["last_run"] == "host" and not off.stats()["replays"]


def test_replayed_outputs_are_the_callers():
    """A result handed out is not written by the next replay (fresh output arrays per run)."""
    sess = ge.Session(bert_like(batch=1, vocab=100, max_seq=64), runtime="v2")
    a, b = ({"input_ids": np.full((1, 9), k, np.int64)} for k in (3, 7))
    for _ in range(2):
        sess.run(None, a)
    first = sess.run(None, a)[0]
    kept = first.copy()
    second = sess.run(None, b)[0]   # the same shape: the same table, into fresh output arrays
    assert sess.stats()["last_run"] == "replayed" and sess.stats()["replayed_runs"] == 2
    assert np.array_equal(first, kept) and not np.array_equal(first, second)


def test_bert_tiny_export_replays_bitwise_and_matches_pytorch():
    model = exports.load("bert_tiny")
    on, off = _pair(model)
    feeds, want = exports.reference("bert_tiny")
    assert _runs(on, off, [feeds, exports.bert_feeds(2, 5, vocab=100)])[2] == "replayed"
    got = on.run(None, feeds)
    assert on.stats()["last_run"] == "replayed"
    for g, (name, w) in zip(got, want.items()):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=name)


def test_gpt2_step_with_a_growing_past_replays_bitwise():
    model = exports.load("gpt2_tiny_step")
    ref, _ = exports.reference("gpt2_tiny_step")
    _, heads, _, size = ref["past_key_values.0.key"].shape
    layers = sum(k.startswith("past") for k in ref) // 2
    on, off = _pair(model)
    feeds = [exports.gpt2_step_feeds(layers, heads, size, past, vocab=100, seed=past) for past in (3, 4, 5, 3)]
    how = _runs(on, off, feeds)
    assert how == ["host", "recorded", "replayed"] * 3 + ["replayed"] * 3
    assert not on.stats()["replay_refused"]


def _relu_model(shape=("N", 4)):
    nodes = [h.make_node("Relu", ["x"], ["r"]), h.make_node("Neg", ["r"], ["y"])]
    g = h.make_graph(nodes, "m", [h.make_tensor_value_info("x", T.FLOAT, list(shape))],
                     [h.make_tensor_value_info("y", T.FLOAT, None)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_lru_eviction_at_capture_limit():
    sess = ge.Session(_relu_model(), runtime="v2", options={"capture_limit": 2, "executor_instances": 1})
    x = {n: np.arange(4 * n, dtype=np.float32).reshape(n, 4) - 5 for n in (1, 2, 3)}

    def run(n):
        y = sess.run(None, {"x": x[n]})[0]
        np.testing.assert_array_equal(y, -np.maximum(x[n], 0))
        return sess.stats()["last_run"]
    assert [run(1), run(1), run(2), run(2), run(2), run(1)] == ["host", "recorded", "host", "recorded",
                                                                   "replayed", "replayed"]
    assert [run(3), run(3)] == ["host", "recorded"]   # evicts 2, the least recently used
    st = sess.stats()
    assert st["evicted_shapes"] == 1 and st["recorded_shapes"] == 3
    assert run(1) == "replayed" and run(3) == "replayed"
    assert run(2) == "recorded"                       # seen before: recorded again at once, evicting 1
    assert sess.stats()["evicted_shapes"] == 2 and run(1) == "recorded"


def test_shapes_cycling_past_the_limit_are_not_recorded_again():
    """An entry evicted before it ever replayed refuses its key (a decode loop's growing past)."""
    sess = ge.Session(_relu_model(), runtime="v2", options={"capture_limit": 1, "executor_instances": 1})
    x = {n: np.full((n, 4), n - 2.5, np.float32) for n in (1, 2)}
    how = []
    for n in (1, 1, 2, 2, 1, 1):
        np.testing.assert_array_equal(sess.run(None, {"x": x[n]})[0], -np.maximum(x[n], 0))
        how.append(sess.stats()["last_run"])
    assert how == ["host", "recorded", "host", "recorded", "host", "host"]
    assert "before its first replay" in " ".join(sess.stats()["replay_refused"].values())


def test_turned_off_by_option_and_environment(monkeypatch):
    x = {"x": np.ones((2, 4), np.float32)}
    sess = ge.Session(_relu_model(), runtime="v2", options={"capture_limit": 0})
    for _ in range(3):
        sess.run(None, x)
    assert sess.stats()["last_run"] == "host" and not sess.stats()["replays"]
    monkeypatch.setenv("GE_V2_REPLAY", "0")
    sess = ge.Session(_relu_model(), runtime="v2")
    for _ in range(3):
        sess.run(None, x)
    assert sess.stats()["last_run"] == "host" and not sess.stats()["replays"]
    with pytest.raises(GEError, match="capture_limit"):
        ge.Options(capture_limit=-1)


def _nonzero_model(width: int):
    nodes = [h.make_node("NonZero", ["x"], ["nz"], name="nz"), h.make_node("Cast", ["nz"], ["y"], to=T.FLOAT)]
    g = h.make_graph(nodes, "m", [h.make_tensor_value_info("x", T.FLOAT, ["N", width])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


@pytest.mark.parametrize("width", [4, 2048], ids=["guarded", "refused"])
def test_nonzero_data_dependent_shape_stays_correct(width):
    """A small NonZero input is guarded (replays while its data repeats; other data of the same shape stops
    the replay, runs host-driven and refuses the key); a big one refuses the key at once."""
    sess = ge.Session(_nonzero_model(width), runtime="v2")
    rng = np.random.default_rng(0)
    xs = [(rng.standard_normal((2, width)) > k).astype(np.float32) for k in (0.0, 0.0, 1.0)]
    xs[1] = xs[0].copy()
    how = []
    for x in (xs[0], xs[0], xs[1], xs[2], xs[2]):
        y = sess.run(None, {"x": x})[0]
        np.testing.assert_array_equal(y, np.array(np.nonzero(x), np.float32))
        how.append(sess.stats()["last_run"])
    refused = sess.stats()["replay_refused"]
    if width == 4:
        assert how == ["host", "recorded", "replayed", "host", "host"] and sess.stats()["replay_fallbacks"] == 1
        assert "follow the data" in next(iter(refused.values()))
    else:
        assert "replayed" not in how and "data, not shapes" in next(iter(refused.values()))


def test_loop_is_not_captured_and_stays_correct():
    feeds = {"M": np.array(10, np.int64), "go": np.array(True), "y0": np.array([1, 2], np.float32),
             "x": np.array([0.5, 1], np.float32), "limit": np.array(9, np.float32)}
    on, off = _pair(_loop_model())
    assert "replayed" not in _runs(on, off, [feeds])
    assert "Loop node 'loop' runs on the host" in next(iter(on.stats()["replay_refused"].values()))


def test_a_loop_body_replays_inside_the_host_loop():
    """The Loop stays host-driven; its body's runs (one an iteration, the same shapes) replay."""
    feeds = {"M": np.array(40, np.int64), "go": np.array(True), "y0": np.array([1, 2], np.float32),
             "x": np.array([0.5, 1], np.float32), "limit": np.array(1e9, np.float32)}
    on, off = _pair(_loop_model())
    _runs(on, off, [feeds], times=2)
    body = on._executor._bodies[0].stats()
    assert body["replayed_runs"] >= 40 and body["last_run"] == "replayed" and not body["replay_refused"]


def _gather_model():
    table = onnx.numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "table")
    g = h.make_graph([h.make_node("Gather", ["table", "ids"], ["y"], name="lookup")], "m",
                     [h.make_tensor_value_info("ids", T.INT64, ["N"])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], [table])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_an_error_in_a_replayed_kernel_names_the_node():
    sess = ge.Session(_gather_model(), runtime="v2")
    ok = np.array([1, 2, 3], np.int64)
    for _ in range(3):
        np.testing.assert_array_equal(sess.run(None, {"ids": ok})[0], np.arange(40).reshape(10, 4)[ok])
    assert sess.stats()["last_run"] == "replayed"
    with pytest.raises(ExecutionError, match="Gather node 'lookup'"):
        sess.run(None, {"ids": np.array([1, 99, 3], np.int64)})
    np.testing.assert_array_equal(sess.run(None, {"ids": ok})[0], np.arange(40).reshape(10, 4)[ok])
    assert sess.stats()["last_run"] == "replayed"


def test_threads_replaying_one_session_match_serial_runs():
    sess = ge.Session(bert_like(batch=1, vocab=100, max_seq=64), runtime="v2")
    rng = np.random.default_rng(3)
    feeds = [{"input_ids": rng.integers(0, 100, (1, n)).astype(np.int64)} for n in (6, 11, 6, 17)]
    expected = [ge.Session(bert_like(batch=1, vocab=100, max_seq=64), runtime="v2",
                           options={"capture_limit": 0}).run(None, f)[0] for f in feeds]
    errors = hammer(lambda f: sess.run(None, f)[0], feeds, expected, 12, rotate=True)
    assert not errors, errors[:5]
    st = sess.stats()
    assert st["replayed_runs"] > 0 and st["replay_fallbacks"] == 0
    sess.close()


def test_the_replay_arena_gives_way_to_a_host_run_short_of_memory():
    """A recorded shape's arena (600 KB) and a bigger shape's host run (two 400 KB tensors) do not both fit a
    1 MiB device: the arena and its entries go back and the run goes through."""
    nodes = [h.make_node("Relu" if i % 2 == 0 else "Sigmoid", [f"t{i}"], [f"t{i + 1}"]) for i in range(4)]
    g = h.make_graph(nodes, "m", [h.make_tensor_value_info("t0", T.FLOAT, ["N", 256])],
                     [h.make_tensor_value_info("t4", T.FLOAT, None)])
    sess = ge.Session(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), runtime="v2",
                      options=ge.Options(device_memory_bytes=1 << 20))
    small, big = np.ones((300, 256), np.float32), np.full((400, 256), -1, np.float32)
    for _ in range(3):
        sess.run(None, {"t0": small})
    assert sess.stats()["last_run"] == "replayed" and sess.allocator_stats()["replay_arena_bytes"] >= 600_000
    want = 1 / (1 + np.exp(-np.maximum(1 / (1 + np.exp(-np.maximum(big, 0))), 0)))
    np.testing.assert_allclose(sess.run(None, {"t0": big})[0], want, rtol=1e-6)
    assert sess.allocator_stats()["replay_arena_bytes"] == 0 and sess.stats()["last_run"] == "host"


def test_one_array_fed_as_two_inputs_is_not_recorded_as_one():
    g = h.make_graph([h.make_node("Sub", ["a", "b"], ["y"])], "m",
                     [h.make_tensor_value_info(n, T.FLOAT, ["N"]) for n in "ab"],
                     [h.make_tensor_value_info("y", T.FLOAT, None)])
    sess = ge.Session(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), runtime="v2")
    x = aligned_empty((8,), np.float32)   # read in place (GE's zero-copy rule): both inputs at one address
    x[:] = np.arange(8)
    for _ in range(3):
        np.testing.assert_array_equal(sess.run(None, {"a": x, "b": x})[0], np.zeros(8, np.float32))
    assert sess.stats()["last_run"] == "host" and "share memory" in " ".join(sess.stats()["replay_refused"].values())
    np.testing.assert_array_equal(sess.run(None, {"a": x, "b": x + 1})[0], -np.ones(8, np.float32))


def test_a_replay_binds_aligned_feeds_in_place_and_copies_the_others():
    """A replay reads only the feeds (no whole buffer table per run): an aligned feed is bound where it is,
    a misaligned one is copied first (GE's 32-byte rule), as a host-driven run does; both bitwise equal."""
    on, off = _pair(bert_like(batch=1, vocab=100, max_seq=64))
    ids = np.random.default_rng(5).integers(0, 100, (1, 11)).astype(np.int64)
    aligned = aligned_empty(ids.shape, ids.dtype)
    aligned[:] = ids
    raw = aligned_empty((ids.size + 1,), ids.dtype)
    misaligned = raw[1:].reshape(ids.shape)   # 8 bytes past a 64-byte boundary
    misaligned[:] = ids
    want = off.run(None, {"input_ids": ids})[0]
    for _ in range(2):
        on.run(None, {"input_ids": aligned})
    before = on.stats()
    for feed, counter in ((aligned, "zero_copy_inputs"), (misaligned, "copied_inputs")):
        got = on.run(None, {"input_ids": feed})[0]
        assert on.stats()["last_run"] == "replayed" and np.array_equal(got, want)
        assert on.stats()[counter] == before[counter] + 1

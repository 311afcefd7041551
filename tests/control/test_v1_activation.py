"""Activated streams (runtime_v1/stream_activation.py, Options.activate_body_streams): a static body's streams run
side by side as GE's StreamActive binds them (docs/ge-reference.md §3.6), with no event toward a stream the control
node activates (3.4, OptimizeByStreamActivate)."""
from __future__ import annotations

import numpy as np
import pytest
from hammer import hammer
from onnx import TensorProto as T
from onnx import helper as h

import ge
from ge.errors import ExecutionError
from ge.npu import Tracer
from ge.zoo import rnn_loop

F = T.FLOAT
ON = ge.Options(thread_budget=2, activate_body_streams=True)


def _tables(s):
    return len(s._executor.model.streams)


def test_a_loop_body_of_three_streams_runs_activated_and_bit_equal():
    m = rnn_loop(steps=5, batch=2, hidden=16)
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((5, 2, 16)).astype(np.float32), "h0": np.zeros((2, 16), np.float32)}
    on, off = ge.Session(m, runtime="v1", options=ON), ge.Session(m, runtime="v1")
    body = on.plan.nodes[0].bodies[0][1]
    assert len({n.stream for n in body.nodes}) == 3
    # one activated stream (a table and a thread): of the other two, one is the control node's, one holds
    # aliases only (nothing to activate: its rows join the first stream's)
    assert _tables(on) == 2 and _tables(off) == 1
    want = ge.Session(m, runtime="v2").run(None, feeds)
    for _ in range(20):                                     # counted lines start from zero every run
        for a, b, c in zip(on.run(None, feeds), off.run(None, feeds), want):
            np.testing.assert_array_equal(a, c)
            np.testing.assert_array_equal(b, c)
    tracer = Tracer()
    for a, c in zip(on.run_traced(feeds, tracer), want):
        np.testing.assert_array_equal(a, c)
    names = {s.name for s in tracer.slices}
    assert any(n.startswith("activate") for n in names) and any(n.startswith("rnn/") for n in names)


def _captures_from_two_streams():
    """The Loop reads a = Relu(x) and b = Sigmoid(x), made on two outer streams; its body reads them on two
    streams of its own: GE's subgraph rule would add an event from each producer to each reading stream."""
    vi = h.make_tensor_value_info
    body = h.make_graph([h.make_node("Mul", ["h_in", "a"], ["p"]), h.make_node("Tanh", ["p"], ["p2"]),
                         h.make_node("Add", ["h_in", "b"], ["q"]), h.make_node("Sigmoid", ["q"], ["q2"]),
                         h.make_node("Add", ["p2", "q2"], ["h_out"]),
                         h.make_node("Identity", ["cond_in"], ["cond_out"])],
                        "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("h_in", F, [4])],
                        [vi("cond_out", T.BOOL, []), vi("h_out", F, [4])])
    g = h.make_graph([h.make_node("Relu", ["x"], ["a"]), h.make_node("Sigmoid", ["x"], ["b"]),
                      h.make_node("Loop", ["M", "", "x"], ["y"], body=body, name="loop")], "m",
                     [vi("x", F, [4])], [vi("y", F, [4])], [h.make_tensor("M", T.INT64, [], [3])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_activation_prunes_the_events_into_activated_streams():
    m = _captures_from_two_streams()
    s = ge.Session(m, runtime="v1", options=ON)
    model = s._executor.model
    assert model.activated and model.pruned_events >= 1
    x = np.array([-1, 0.5, 2, -3], np.float32)
    np.testing.assert_array_equal(s.run(None, {"x": x})[0], ge.Session(m, runtime="v2").run(None, {"x": x})[0])


def test_a_failing_task_on_an_activated_stream_names_it_and_the_session_runs_again():
    """Gather by a fed index, out of range: the activated stream's task fails, every stream gives up (ABORT),
    the error names the body node under its Loop; the next run, in range, is right."""
    m = rnn_loop(steps=3, batch=1, hidden=4)
    body = m.graph.node[0].attribute[0].g
    body.node[0].input[1] = "k"                             # x[k] instead of x[t]: k captured from the feeds
    m.graph.input.append(h.make_tensor_value_info("k", T.INT64, []))
    s = ge.Session(m, runtime="v1", options=ON)
    assert _tables(s) > 1
    feeds = {"x": np.ones((3, 1, 4), np.float32), "h0": np.zeros((1, 4), np.float32)}
    with pytest.raises(ExecutionError, match="rnn/Gather"):
        s.run(None, {**feeds, "k": np.array(7, np.int64)})
    got = s.run(None, {**feeds, "k": np.array(1, np.int64)})
    want = ge.Session(m, runtime="v2").run(None, {**feeds, "k": np.array(1, np.int64)})
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("options", [ON, ge.Options()], ids=["activated", "in plan order"])
def test_eight_threads_share_a_loop_session(options):
    """Concurrent runs check out their own instances: each its control region, base table and counted lines."""
    m = rnn_loop(steps=4, batch=1, hidden=8)
    rng = np.random.default_rng(3)
    work = [{"x": rng.standard_normal((4, 1, 8)).astype(np.float32), "h0": rng.standard_normal((1, 8)).astype(
        np.float32)} for _ in range(8)]
    ref = ge.Session(m, runtime="v2")
    expected = [ref.run(None, w) for w in work]
    s = ge.Session(m, runtime="v1", options=options)
    assert hammer(lambda f: s.run(None, f), work, expected, runs=10, timeout=60, rotate=True) == []

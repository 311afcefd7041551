"""The compiler wires GE's streams and events into plans: engines, streams, events, JSON, summary, options."""
import json
import logging

import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.npu.engines import GE_LOCAL
from ge.schedule.events import verify_events
from ge.zoo import LIGHT_MODELS, light_model_path


def preds(plan):
    producer = {t: n.step for n in plan.nodes for t in n.outputs if t >= 0}
    return [sorted({producer[t] for t in n.inputs if t in producer}) for n in plan.nodes]


@pytest.mark.parametrize("name", ["inception_v1", "squeezenet", "resnet50"])
def test_plan_streams_and_events_cover_every_dependency(name):
    plan = ge.compile(light_model_path(name))
    streams = [n.stream for n in plan.nodes]
    assert verify_events(preds(plan), streams, plan.events) == []
    assert sorted(set(streams)) == list(range(plan.num_streams))
    for n in plan.nodes:
        assert (n.engine == GE_LOCAL) == (n.is_alias or n.no_task)  # no task: an alias or a Concat in place
    for e in plan.events:
        assert streams[e.record_after] == e.src_stream != e.dst_stream == streams[e.wait_before]


def test_inception_gets_several_streams_and_json_names_event_nodes():
    plan = ge.compile(light_model_path("inception_v1"))
    assert plan.num_streams > 1 and plan.events and plan.single_stream_reason is None
    d = json.loads(plan.to_json())
    assert d["num_streams"] == plan.num_streams
    names = [n.name for n in plan.nodes]
    for e, j in zip(plan.events, d["events"]):
        assert (j["id"], j["record_after"], j["wait_before"]) == (e.id, names[e.record_after],
                                                                   names[e.wait_before])
    assert {n["stream"] for n in d["nodes"]} == set(range(plan.num_streams))
    text = plan.summary()
    assert f"streams: {plan.num_streams}, events: {len(plan.events)}" in text and "record e0" in text


@pytest.mark.parametrize("opts, why", [({"enable_single_stream": True}, "enable_single_stream"),
                                       ({"ge.enableSingleStream": "true"}, "enable_single_stream"),
                                       ({"max_streams": 1}, "max_streams is 1")])
def test_single_stream_when_asked(opts, why, caplog):
    with caplog.at_level(logging.INFO, logger="ge"):
        plan = ge.compile(light_model_path("inception_v1"), opts)
    assert plan.num_streams == 1 and plan.events == () and why in plan.single_stream_reason
    assert any(why in r.getMessage() for r in caplog.records)


def _dynamic_branches():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["x"], ["b"]),
             helper.make_node("Add", ["a", "b"], ["y"])]
    g = helper.make_graph(nodes, "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_dynamic_shapes_stay_on_one_stream_unless_the_environment_says(monkeypatch):
    monkeypatch.delenv("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", raising=False)
    plan = ge.compile(_dynamic_branches())
    assert plan.num_streams == 1 and "dynamic shapes" in plan.single_stream_reason
    monkeypatch.setenv("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", "1")
    plan = ge.compile(_dynamic_branches())
    assert plan.num_streams == 2 and plan.single_stream_reason is None
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    y, = ge.Session(_dynamic_branches(), runtime="v2").run(None, {"x": x})   # a dynamic plan on 2 threads
    np.testing.assert_allclose(y, np.maximum(x, 0) + 1 / (1 + np.exp(-x)), rtol=1e-6)


def test_streams_per_light_model_are_stable():
    """Golden numbers (max_streams 8, dfs): a change of stream decision shows here."""
    got = {}
    for name in LIGHT_MODELS:
        p = ge.compile(light_model_path(name))
        got[name] = (p.num_streams, len(p.events))
    assert got == {"bvlc_alexnet": (1, 0), "densenet121": (1, 0), "inception_v1": (4, 54),
                   "inception_v2": (4, 56), "resnet50": (1, 0), "shufflenet": (2, 6), "squeezenet": (2, 16),
                   "vgg19": (1, 0), "zfnet512": (1, 0)}

"""Sequence ops the node cases leave out (SequenceConstruct/At/Erase, ConcatFromSequence, SplitToSequence
with a scalar split) against onnx.reference, a sequence as a feed and a result, and their typed errors."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx.reference import ReferenceEvaluator

import ge
from ge.errors import ExecutionError, InputError

F = T.FLOAT
SEQ = h.make_sequence_type_proto(h.make_tensor_type_proto(F, None))


def _model():
    nodes = [h.make_node("SequenceConstruct", ["a", "b", "c"], ["s"]),
             h.make_node("SequenceErase", ["s", "minus1"], ["s2"]),              # drop c
             h.make_node("SequenceAt", ["s2", "minus1"], ["last"]),               # b
             h.make_node("ConcatFromSequence", ["s2"], ["cat"], axis=0),
             h.make_node("SplitToSequence", ["cat", "two"], ["parts"], axis=0),
             h.make_node("SequenceLength", ["parts"], ["n"]),
             h.make_node("ConcatFromSequence", ["parts"], ["stacked"], axis=-1, new_axis=1)]
    g = h.make_graph(nodes, "seq", [h.make_tensor_value_info(x, F, [2, 3]) for x in "abc"],
                     [h.make_tensor_value_info("last", F, None), h.make_tensor_value_info("n", T.INT64, None),
                      h.make_tensor_value_info("stacked", F, None), h.make_value_info("parts", SEQ)],
                     [h.make_tensor("minus1", T.INT64, [], [-1]), h.make_tensor("two", T.INT64, [], [2])])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_sequence_ops_match_the_reference():
    rng = np.random.default_rng(0)
    feeds = {x: rng.standard_normal((2, 3)).astype(np.float32) for x in "abc"}
    want = ReferenceEvaluator(_model()).run(None, feeds)
    got = ge.Session(_model()).run(None, feeds)
    for g, w in zip(got[:3], want[:3]):
        np.testing.assert_allclose(g, w)
    assert isinstance(got[3], list) and len(got[3]) == len(want[3]) == 2
    for g, w in zip(got[3], want[3]):
        np.testing.assert_allclose(g, w)


def _insert_model():
    g = h.make_graph([h.make_node("SequenceInsert", ["s", "x", "at"], ["out"])], "ins",
                     [h.make_value_info("s", SEQ), h.make_tensor_value_info("x", F, [2]),
                      h.make_tensor_value_info("at", T.INT64, [])], [h.make_value_info("out", SEQ)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_a_sequence_feed_and_its_errors():
    s = ge.Session(_insert_model())
    assert s.get_inputs()[0].type == "seq(tensor(float))"
    x, one = np.ones(2, np.float32), np.array(1, np.int64)
    out = s.run(None, {"s": [np.zeros(2, np.float32)] * 2, "x": x, "at": one})[0]
    assert [list(a) for a in out] == [[0, 0], [1, 1], [0, 0]]
    with pytest.raises(InputError, match="'s' .*holds dtype float64"):
        s.run(None, {"s": [np.zeros(2)], "x": x, "at": one})
    with pytest.raises(InputError, match="'s' is a sequence: give a list of arrays"):
        s.run(None, {"s": np.zeros(2, np.float32), "x": x, "at": one})
    with pytest.raises(ExecutionError, match="SequenceInsert node .*position 5 is out of range"):
        s.run(None, {"s": [], "x": x, "at": np.array(5, np.int64)})

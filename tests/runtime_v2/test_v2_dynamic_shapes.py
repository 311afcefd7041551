"""Dynamic shapes, end to end: a light model with a symbolic batch matches per-sample runs of the static
model; the BERT-like encoder with a symbolic sequence length matches onnxruntime."""
import numpy as np
import pytest

import ge
from ge.models import bert_like, with_symbolic_dims
from ge.zoo import with_random_weights

ort = pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def squeezenet():
    static = with_random_weights("squeezenet", seed=3)
    inits = {t.name for t in static.graph.initializer}
    x = next(i for i in static.graph.input if i.name not in inits)
    dynamic = with_symbolic_dims(static, {x.name: {0: "N"}})
    shape = tuple(d.dim_value for d in x.type.tensor_type.shape.dim)
    return ge.Session(static, runtime="v2"), ge.Session(dynamic, runtime="v2"), x.name, shape


def test_symbolic_batch_matches_per_sample_runs(squeezenet):
    static, dynamic, name, shape = squeezenet
    assert dynamic.get_inputs()[0].shape[0] == "N" and dynamic.plan.is_dynamic
    x = np.random.default_rng(0).standard_normal((7, *shape[1:])).astype(np.float32)
    per_sample = [static.run(None, {name: x[i:i + 1]})[0] for i in range(7)]
    for batch in (1, 2, 3, 7):
        y, = dynamic.run(None, {name: x[:batch]})
        assert y.shape[0] == batch
        for i in range(batch):
            np.testing.assert_allclose(y[i:i + 1], per_sample[i], rtol=1e-4, atol=1e-5)
    st = dynamic.allocator_stats()["dynamic"]
    assert st["allocated"] == 0 and st["hits"] > st["misses"]


@pytest.fixture(scope="module")
def bert():
    model = bert_like(layers=2, hidden=64, heads=4, seed=0)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    ref = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return ge.Session(model, runtime="v2"), ref


@pytest.mark.parametrize("seq", [16, 77, 128])
def test_bert_like_symbolic_sequence_matches_onnxruntime(bert, seq):
    sess, ref = bert
    assert [i.shape for i in sess.get_inputs()] == [["batch", "seq"]]
    ids = np.random.default_rng(seq).integers(0, 1000, (2, seq)).astype(np.int64)
    y, = sess.run(None, {"input_ids": ids})
    want, = ref.run(None, {"input_ids": ids})
    assert y.shape == (2, seq, 64)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


def test_bert_like_is_built_as_described():
    m = bert_like()
    ops = {n.op_type for n in m.graph.node}
    assert {"Gather", "LayerNormalization", "MatMul", "Softmax", "Erf", "Add", "Range", "Transpose"} <= ops
    assert sum(n.op_type == "Softmax" for n in m.graph.node) == 2

"""TfIdfVectorizer and TreeEnsemble beyond the node cases (which cover TF counts and SUM of one or two trees
only): the weighting modes, a pool n-gram listed twice, the other aggregations, missing values, bad input."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ge
from op_check import check_op, ge_only
from ort_oracle import check_ort

POOL = dict(pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 5, 6], ngram_counts=[0, 4],
            ngram_indexes=[0, 1, 2, 3, 4, 5, 6, 3])  # the last bigram (5, 6) is listed twice: column 3 wins
X = np.array([[1, 1, 3, 3, 3, 7, 5, 6, 6, 7], [8, 7, 6, 5, 6, 6, 7, 8, 2, 4]], np.int32)


@pytest.mark.parametrize("mode,weights", [("TF", None), ("IDF", [.5, 1, 2, 3, 4, 5, 6]),
                                          ("TFIDF", [.5, 1, 2, 3, 4, 5, 6])])
def test_tfidf_modes_against_the_reference(mode, weights):
    attrs = dict(POOL, mode=mode, min_gram_length=1, max_gram_length=2, max_skip_count=2)
    if weights:
        attrs["weights"] = weights
    check_op("TfIdfVectorizer", [X], attrs, opset=17)


def test_tfidf_idf_without_weights_against_onnxruntime():
    """Presence as 1 or 0 (the reference evaluator fails without weights)."""
    attrs = dict(POOL, pool_int64s=POOL["pool_int64s"][:-2], ngram_indexes=POOL["ngram_indexes"][:-1])
    check_ort("TfIdfVectorizer", [X], dict(attrs, mode="IDF", min_gram_length=2, max_gram_length=2,
                                           max_skip_count=1))  # (onnxruntime refuses a pool listing one twice)


def test_tfidf_refuses_string_pools():
    with pytest.raises(ge.GEError, match="pool_strings"):
        ge_only("TfIdfVectorizer", [X], dict(mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0,
                                             pool_strings=["a"], ngram_counts=[0], ngram_indexes=[0]))


def _trees(aggregate, missing=None, post=0):
    """Two trees over 2 features: a LEQ node and a GT node with a MEMBER node under it."""
    attrs = dict(aggregate_function=aggregate, post_transform=post, n_targets=2, tree_roots=[0, 2],
                 nodes_featureids=[0, 1, 1, 0], nodes_truenodeids=[0, 1, 3, 2], nodes_trueleafs=[1, 1, 0, 1],
                 nodes_falsenodeids=[1, 0, 3, 3], nodes_falseleafs=[1, 1, 1, 1],
                 nodes_modes=numpy_helper.from_array(np.array([0, 5, 3, 6], np.uint8), "nodes_modes"),
                 nodes_splits=numpy_helper.from_array(np.array([0.5, 2.0, 1.0, np.nan]), "nodes_splits"),
                 membership_values=numpy_helper.from_array(np.array([1.5, 4.0, np.nan]), "membership_values"),
                 leaf_targetids=[0, 1, 0, 1], leaf_weights=numpy_helper.from_array(
                     np.array([1.0, 2.5, -3.0, 7.0]), "leaf_weights"))
    if missing:
        attrs["nodes_missing_value_tracks_true"] = missing
    x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [5, 2])
    y = helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)
    node = helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", **attrs)
    return helper.make_model(helper.make_graph([node], "trees", [x], [y]), opset_imports=[
        helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)])


XT = np.array([[0.2, 1.5], [0.9, 4.0], [np.nan, 3.0], [1.5, np.nan], [0.5, 2.0]])


@pytest.mark.parametrize("aggregate", [0, 1, 2, 3])
@pytest.mark.parametrize("missing", [None, [1, 0, 1, 0]])
def test_tree_ensemble_aggregations_and_missing_values(aggregate, missing):
    m = _trees(aggregate, missing)
    want = ReferenceEvaluator(m).run(None, {"x": XT})[0]
    for runtime in ("v1", "v2"):
        got = ge.Session(m, runtime=runtime).run(None, {"x": XT})[0]
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_tree_ensemble_refuses_post_transforms():
    with pytest.raises(ge.GEError, match="post_transform"):
        ge.Session(_trees(1, post=2))

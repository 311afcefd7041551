"""fuse_skip_layer_norm: residual Add + LayerNormalization -> ge::SkipLayerNormalization; the same bits as the
unfused plan, onnxruntime's answer; near misses stay unfused."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from pass_check import ops, randn, run_pass

import ge
from ge.passes import fuse_skip_layer_norm

N = 8


def _model(a_shape, b_shape, axis=-1, extra_user=False, gamma_size=N, ln_outputs=1, sym=False):
    """Add(a, b) -> LayerNormalization(gamma, beta) [and the sum read again later: GPT-2's residual]."""
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]),
             helper.make_node("LayerNormalization", ["s", "g", "be"], ["y", "mean", "istd"][:ln_outputs],
                              axis=axis, epsilon=1e-5)]
    outs = ["y"] + (["mean"] if ln_outputs > 1 else [])
    if extra_user:
        nodes.append(helper.make_node("Mul", ["s", "y"], ["z"]))
        outs.append("z")
    dims = (lambda s: [f"d{i}" if sym and d != 1 else d for i, d in enumerate(s[:-1])] + [s[-1]])
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, dims(a_shape)),
                     helper.make_tensor_value_info("b", TensorProto.FLOAT, dims(b_shape))],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        [numpy_helper.from_array(randn(gamma_size), "g"), numpy_helper.from_array(randn(gamma_size), "be")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _check(m, feeds):
    import onnxruntime as ort
    got = ge.Session(m, runtime="v2", options=ge.Options(verify_passes=True)).run(None, feeds)
    plain = ge.Session(m, runtime="v2", options=ge.Options(disabled_passes=("fuse_skip_layer_norm",))).run(None, feeds)
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, p, r in zip(got, plain, ref):
        assert np.array_equal(g, p)     # the same operations: the same bits
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sym", [False, True])
@pytest.mark.parametrize("shapes", [((2, 5, N), (2, 5, N)), ((2, 5, N), (1, 5, N))])
def test_residual_add_layer_norm_fuses(shapes, sym):
    m = _model(*shapes, sym=sym)
    g, changed = run_pass(m, fuse_skip_layer_norm)
    assert changed and ops(g) == ["ge::SkipLayerNormalization"] and len(g.nodes[0].outputs) == 1
    _check(m, {"a": randn(*shapes[0]), "b": randn(*shapes[1])})


def test_a_sum_read_again_is_the_second_output():
    m = _model((3, N), (3, N), extra_user=True)
    g, changed = run_pass(m, fuse_skip_layer_norm)
    assert changed and ops(g) == ["ge::SkipLayerNormalization", "Mul"]
    assert [v.name for v in g.nodes[0].outputs] == ["y", "s"]
    _check(m, {"a": randn(3, N), "b": randn(3, N)})


@pytest.mark.parametrize("near_miss", ["axis", "gamma_size", "ln_stats", "broadcast_inner"])
def test_near_misses_stay_unfused(near_miss):
    m = {"axis": lambda: _model((2, 4, N), (2, 4, N), axis=1, gamma_size=4 * N),
         "gamma_size": lambda: _model((2, 4, N), (2, 4, N), axis=1, gamma_size=4 * N),
         "ln_stats": lambda: _model((2, 4, N), (2, 4, N), ln_outputs=2),
         "broadcast_inner": lambda: _model((2, 4, N), (2, 1, N))}[near_miss]()
    g, changed = run_pass(m, fuse_skip_layer_norm)
    assert not changed and "ge::SkipLayerNormalization" not in ops(g)


def test_a_symbolic_broadcast_the_kernel_cannot_do_is_refused_when_bound():
    m = _model((2, 4, N), (2, 1, N))
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "s"
    m.graph.input[1].type.tensor_type.shape.dim[1].dim_param = "t"   # 1 at run time: an inner broadcast
    g, changed = run_pass(m, fuse_skip_layer_norm)
    assert changed
    sess = ge.Session(m, runtime="v2")
    with pytest.raises(ge.errors.GEError, match="SkipLayerNormalization|leading axes"):
        sess.run(None, {"a": randn(2, 4, N), "b": randn(2, 1, N)})

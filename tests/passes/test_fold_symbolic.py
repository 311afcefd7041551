"""fold_symbolic and fold_constants on the exporters' shape arithmetic: Before/Expected on small graphs, the
symbolic sizes (ge/ir/symbolic.py), numerics against onnx.reference, and the data-dependent case kept dynamic
with its reason."""
import numpy as np
import pytest
from onnx import TensorProto, helper
from pass_check import check_numerics, node, printed, randn, run_pass

import ge
from ge.dynamic_reasons import dynamic_reasons
from ge.ir.symbolic import Expr
from ge.npu import Tracer
from ge.passes import eliminate_dead_code, fold_constants, fold_symbolic

I64 = lambda *v: np.array(v, np.int64)  # noqa: E731


def _model(nodes, inputs: dict, outputs, inits=None):
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outputs],
        [helper.make_tensor(n, TensorProto.INT64, a.shape, a.ravel()) for n, a in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _flatten_heads(shape):
    """BERT's attention output: Shape -> Gather(0), Gather(1) -> Mul -> Unsqueeze -> Concat -> Reshape."""
    return _model([node("Shape", ["x"], ["s"]), node("Gather", ["s", "i0"], ["b"], axis=0),
                   node("Gather", ["s", "i1"], ["t"], axis=0), node("Mul", ["b", "t"], ["bt"]),
                   node("Unsqueeze", ["bt", "ax0"], ["bt1"]), node("Concat", ["bt1", "last"], ["target"], axis=0),
                   node("Reshape", ["x", "target"], ["y"])], {"x": shape}, ["y"],
                  {"i0": I64(0).reshape(()), "i1": I64(1).reshape(()), "ax0": I64(0), "last": I64(8)})


def test_reshape_target_from_a_symbolic_shape_folds_to_an_expression():
    g, changed = run_pass(_flatten_heads(["batch", "seq", 8]), fold_symbolic, fold=True)
    assert changed
    assert g.values["target"].sym == ("batch*seq", 8)
    assert g.values["y"].shape == ("batch*seq", 8)
    assert printed(g)[-1] == "%y:f32[batch*seq,8] = Reshape(%x, %target)  # y"
    check_numerics(_flatten_heads(["batch", "seq", 8]), {"x": randn(2, 3, 8)})


def test_a_static_dim_of_a_symbolic_shape_folds_to_a_constant():
    # Before: %s = Shape(%x); %n = Gather(%s, 2) ...   Expected: %n is the constant 8 (x: [batch, seq, 8])
    m = _model([node("Shape", ["x"], ["s"]), node("Gather", ["s", "i2"], ["n"], axis=0),
                node("Unsqueeze", ["n", "ax0"], ["n1"]), node("Concat", ["m1", "n1"], ["target"], axis=0),
                node("Reshape", ["x", "target"], ["y"])], {"x": ["batch", "seq", 8]}, ["y"],
               {"i2": I64(2).reshape(()), "ax0": I64(0), "m1": I64(-1)})
    g, _ = run_pass(m, fold_symbolic, fold=True)
    fold_constants(g)
    eliminate_dead_code(g)
    assert g.values["target"].const.tolist() == [-1, 8]
    assert [n.op_type for n in g.nodes] == ["Reshape"]
    assert g.values["y"].shape == ("batch*seq", 8)
    check_numerics(m, {"x": randn(3, 5, 8)})


def test_fixed_shapes_fold_a_chain_of_reshapes_in_one_sweep():
    # twelve Shape -> Concat -> Reshape blocks, each reading the last one's output: one fold_constants sweep
    # folds them all (it once took a pipeline round a block: a 4-layer GPT-2 stayed dynamic)
    nodes, prev = [], "x"
    for k in range(12):
        nodes += [node("Shape", [prev], [f"s{k}"]), node("Slice", [f"s{k}", "z", "one"], [f"h{k}"]),
                  node("Concat", [f"h{k}", "m1"], [f"t{k}"], axis=0), node("Reshape", [prev, f"t{k}"], [f"r{k}"])]
        prev = f"r{k}"
    m = _model(nodes, {"x": [2, 12]}, [prev], {"z": I64(0), "one": I64(1), "m1": I64(-1)})
    g, changed = run_pass(m, fold_constants)
    assert changed and [n.op_type for n in g.nodes] == ["Reshape"] * 12
    assert all(g.values[f"r{k}"].shape == (2, 12) for k in range(12))


def _data_dependent():
    # the Reshape target's last size is how many of `mask` are nonzero: known only from the data
    return _model([node("NonZero", ["mask"], ["nz"]), node("Shape", ["nz"], ["s"]),
                   node("Slice", ["s", "one", "two"], ["n"]), node("Concat", ["m1", "n"], ["target"], axis=0),
                   node("Reshape", ["x", "target"], ["y"], name="reshape_by_data")],
                  {"x": [6], "mask": [6]}, ["y"], {"one": I64(1), "two": I64(2), "m1": I64(-1)})


def test_a_reshape_target_from_data_stays_dynamic_with_its_reason():
    plan = ge.compile(_data_dependent())
    dyn = {n.name for n in plan.nodes if n.is_dynamic}
    assert "reshape_by_data" in dyn and "nz" in dyn
    why = dynamic_reasons(plan)
    assert why == ["NonZero node 'nz': its output shape depends on the value of input 0 ('mask'), fed at run time "
                   "(input 'mask')",
                   "Reshape node 'reshape_by_data': its output shape depends on the value of input 1 ('target'), the "
                   "shape of NonZero node 'nz''s output, known only at run time"]
    x, mask = randn(6), np.array([1, 0, 2, 0, 3, 0], np.float32)
    sess = ge.Session(_data_dependent())
    assert sess.runtime == "v2" and why[0] in sess.stats()["runtime_reason"]
    np.testing.assert_array_equal(sess.run(None, {"x": x, "mask": mask})[0], x.reshape(2, 3))
    with pytest.raises(ge.GEError, match="cannot trace plan 'g': with its input shapes fixed it still has") as e:
        sess.run_traced({"x": x, "mask": mask}, Tracer("g"))   # a profile: the reason, no internal option
    assert "NonZero node 'nz'" in str(e.value) and "enable_" not in str(e.value)


def test_symbolic_sizes_are_canonical_polynomials():
    bs = Expr.of("batch") * Expr.of("seq")
    assert bs.dim == "batch*seq" and Expr.of("seq*batch") == bs
    assert (Expr.of("past") + Expr.of("seq")).dim == "past+seq" and (Expr.of("seq+8") - Expr.of(8)).dim == "seq"
    assert (bs * Expr.of(256)).exact_div(bs).dim == 256
    assert (bs * Expr.of(256)).exact_div(Expr.of(3)) is None and Expr.of("seq").exact_div(Expr.of("batch")) is None
    assert Expr.of("2*batch*seq-1").dim == "2*batch*seq-1"
    assert Expr.of("past_sequence + 1").dim == "past_sequence + 1"   # an exporter's own spelling: one name

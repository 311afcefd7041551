"""runtime_v2's host CPU engine (runtime_v2/host_cpu.py, ge/kernels/host_cpu.py): an export's shape arithmetic in numpy.

The numpy twins against the Numba kernels on the same cases, byte for byte (negative ints, zero divisors,
broadcasting, int32/int64/bool, empty tensors); then a dynamic model whose shape arithmetic goes to the host
engine, against onnx.reference, host-driven and replayed."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import ge
from ge.errors import ExecutionError
from ge.kernels.registry import KernelContext, TensorSpec, call, lookup
from ge.kernels.host_cpu import MAX_ELEMENTS, host_step

RNG = np.random.default_rng(7)


def _ints(shape, dtype=np.int64, lo=-9, hi=10):
    return RNG.integers(lo, hi, size=shape).astype(dtype)


def _both(op, arrays, attrs=None, opset=17, values=()):
    """(host twin's outputs, kernel's outputs) of one node on `arrays`; `values`: inputs read by infer."""
    kernel = lookup(op, "", opset, "n")
    specs = [None if a is None else TensorSpec(a.shape, a.dtype) for a in arrays]
    vals = [a if k in values else None for k, a in enumerate(arrays)]
    ctx = KernelContext(op, "n", dict(attrs or {}), specs, vals, opset, n_outputs=1)
    launch = kernel.bind(ctx)
    outs = ctx.outputs
    host = [np.full(s.shape, 7, s.dtype) for s in outs]
    host_step(ctx, launch)(*[None if a is None else np.ascontiguousarray(a).reshape(-1)
                                        for a in arrays], *[h.reshape(-1) for h in host])
    dev = [np.full(s.shape, 7, s.dtype) for s in outs]
    call(launch, list(arrays), dev)
    return host, dev


def _same(op, arrays, attrs=None, opset=17, values=()):
    host, dev = _both(op, arrays, attrs, opset, values)
    for h, d in zip(host, dev):
        assert h.dtype == d.dtype and h.shape == d.shape
        assert h.tobytes() == d.tobytes(), (op, arrays, h, d)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Mod"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_arithmetic_matches_the_kernels(op, dtype):
    for sa, sb in [((6,), (6,)), ((2, 3), (3,)), ((4, 1), (1, 5)), ((), (3,)), ((0, 3), (3,))]:
        a, b = _ints(sa, dtype), _ints(sb, dtype)
        _same(op, [a, b])
    big = np.array([np.iinfo(dtype).max, np.iinfo(dtype).min, -7, 7, 0, -1], dtype)
    _same(op, [big, np.array([2, -1, 2, -2, 3, 0], dtype)])   # wrapping, a zero divisor
    if op == "Mod":
        _same(op, [_ints((3, 4), dtype), _ints((4,), dtype)], {"fmod": 1})


@pytest.mark.parametrize("op", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
def test_comparisons_match_the_kernels(op):
    _same(op, [_ints((3, 4)), _ints((1, 4))])
    _same(op, [_ints((5,), np.int32), _ints((), np.int32)])
    if op == "Equal":
        _same(op, [_ints((4,), lo=0, hi=2).astype(bool), np.array([True, False, True, True])])


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic_matches_the_kernels(op):
    a, b = _ints((2, 3), lo=0, hi=2).astype(bool), _ints((3,), lo=0, hi=2).astype(bool)
    _same(op, [a, b])
    _same(op, [a[:0], b])


def test_where_min_max_sum_not_cast_match_the_kernels():
    c = _ints((2, 3), lo=0, hi=2).astype(bool)
    _same("Where", [c, _ints((2, 3)), _ints((3,))])
    _same("Where", [c, np.array(True), _ints((2, 1), lo=0, hi=2).astype(bool)])
    for op in ("Max", "Min", "Sum"):
        _same(op, [_ints((2, 3)), _ints((3,)), _ints((1, 1))])
        _same(op, [_ints((2, 3), np.int32)])
    _same("Not", [c])
    for src, to in [(np.int64, TensorProto.BOOL), (np.int64, TensorProto.INT32), (np.bool_, TensorProto.INT64),
                    (np.int32, TensorProto.INT64), (np.int64, TensorProto.FLOAT)]:
        x = np.array([0, 1, -1, 2 ** 31 + 5, -(2 ** 40) - 3, 7], np.int64).astype(src)
        _same("Cast", [x], {"to": to})


def test_movement_and_generators_match_the_kernels():
    x = _ints((3, 4))
    for idx in (np.array(2), np.array([-1, 0, 2]), np.array([[1, -3]])):
        _same("Gather", [x, idx], {"axis": 0})
        _same("Gather", [x[:, :3], idx], {"axis": 1})
    _same("Concat", [_ints((1,)), _ints((2,)), np.zeros(0, np.int64)], {"axis": 0})
    _same("Concat", [_ints((2, 1)), _ints((2, 3))], {"axis": -1})
    _same("Slice", [x, np.array([-1, 1]), np.array([-100, 4]), np.array([0, 1]), np.array([-1, 2])],
          values=(1, 2, 3, 4))
    _same("Expand", [_ints((3, 1)), np.array([2, 3, 4])], values=(1,))
    _same("Range", [np.array(5), np.array(-7), np.array(-3)], values=(0, 1, 2))
    _same("ConstantOfShape", [np.array([2, 3])], {"value": np.array([-4], np.int64)}, values=(0,))
    _same("Shape", [np.zeros((2, 0, 5), np.float32)], {"start": -2})
    _same("Size", [np.zeros((2, 3), np.float32)])


def test_gather_out_of_range_raises_as_the_kernel_does():
    with pytest.raises(IndexError, match="index out of range"):
        _both("Gather", [_ints((3,)), np.array([3])])


def _shape_model():
    """x [n, 4] -> Reshape(x, [n * 2, -1]) with the target and a mask from x's shape, on the host."""
    I64 = TensorProto.INT64
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Mul", ["n", "two"], ["n2"]),
        helper.make_node("Unsqueeze", ["n2", "ax"], ["n2u"]),
        helper.make_node("Concat", ["n2u", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
        helper.make_node("Range", ["zero", "n", "one"], ["r"]),
        helper.make_node("Div", ["r", "minus3"], ["q"]),
        helper.make_node("Less", ["r", "three"], ["lt"]),
        helper.make_node("Where", ["lt", "q", "r"], ["w"]),
        helper.make_node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["wf", "ax1"], ["wfu"]),
        helper.make_node("Add", ["x", "wfu"], ["z"]),
    ]
    inits = [helper.make_tensor(n, I64, [], [v]) for n, v in
             (("zero", 0), ("two", 2), ("one", 1), ("minus3", -3), ("three", 3))]
    inits += [helper.make_tensor("ax", I64, [1], [0]), helper.make_tensor("ax1", I64, [1], [1]),
              helper.make_tensor("minus1", I64, [1], [-1])]
    g = helper.make_graph(nodes, "shapes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 4]),
                           helper.make_tensor_value_info("w", I64, ["n"])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_shape_arithmetic_runs_on_the_host_and_replays():
    model = _shape_model()
    ref = ReferenceEvaluator(model)
    sess = ge.Session(model, runtime="v2")
    st = sess.stats()
    assert st["host_cpu_steps"] >= 9, st   # the shape arithmetic; Reshape (a view) and the float Add stay
    for n in (5, 5, 5, 5, 2, 7, 7, 7):
        x = RNG.standard_normal((n, 4)).astype(np.float32)
        got = sess.run(None, {"x": x})
        for g, w in zip(got, ref.run(None, {"x": x})):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    st = sess.stats()
    assert st["replayed_runs"] >= 3 and not st["replay_refused"], st


def test_over_the_bound_the_kernel_runs():
    model = _shape_model()
    sess = ge.Session(model, runtime="v2", options=ge.Options(capture_limit=0))
    n = MAX_ELEMENTS + 3
    x = RNG.standard_normal((n, 4)).astype(np.float32)
    for g, w in zip(sess.run(None, {"x": x}), ReferenceEvaluator(model).run(None, {"x": x})):
        np.testing.assert_array_equal(g, w)


def test_a_host_step_that_fails_names_the_node():
    I64 = TensorProto.INT64
    g = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i"], ["d"], name="pick")],
        "bad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("d", I64, [])], [helper.make_tensor("i", I64, [], [3])])
    sess = ge.Session(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), runtime="v2")
    with pytest.raises(ExecutionError, match="Gather node 'pick'.*index out of range"):
        sess.run(None, {"x": np.zeros(4, np.float32)})


def test_constant_folding_takes_the_twins():
    """fold_constants folds integer/bool nodes on the twins (no int64 kernel compiled to fold): the kernels'
    bits; float nodes stay with their kernels."""
    from ge.kernels.host_cpu import fold_on_host
    from ge.kernels.registry import run_kernel
    cases = [("Range", [np.array(2), np.array(40), np.array(3)], {}, (0, 1, 2)),
             ("Cast", [np.arange(-3, 3)], {"to": TensorProto.FLOAT}, ()),
             ("Constant", [], {"value": np.array([1.5, -2], np.float32)}, ()),
             ("ConstantOfShape", [np.array([2, 600])], {"value": np.array([3], np.int32)}, (0,)),
             ("Mul", [_ints((2, 3)), _ints((3,))], {}, ()),
             ("Add", [np.ones(3, np.float32), np.ones(3, np.float32)], {}, ())]
    for op, arrays, attrs, values in cases:
        kernel = lookup(op, "", 17, "n")

        def ctx():
            return KernelContext(op, "n", dict(attrs), [TensorSpec(a.shape, a.dtype) for a in arrays],
                                 [a if k in values else None for k, a in enumerate(arrays)], 17)
        got, want = fold_on_host(kernel, ctx(), arrays), run_kernel(kernel, ctx(), arrays)
        if op == "Add":
            assert got is None   # float32: its kernel
            continue
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()


def test_warm_up_compiles_no_kernel_of_a_host_step():
    """The first run's warm-up (ge.warmup) skips the steps runtime_v2 runs on its host CPU engine: a BERT
    export's static shape steps (Gather, Cast, Concat, Where on int64) compile nothing."""
    from ge import exports
    from ge.warmup import kernel_signatures
    sess = ge.Session(exports.load("bert_tiny"), runtime="v2")
    every = kernel_signatures(sess.plan)
    kept = kernel_signatures(sess.plan, sess._executor.host_cpu_steps)
    assert len(kept) < len(every) and sess.stats()["host_cpu_steps"] > 20
    assert not [name for name in kept.values() if "Shape" in name or "Concat" in name or "Where" in name], kept

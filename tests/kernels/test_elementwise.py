"""Elementwise kernels (elementwise, activation, binary, cast) against onnx.reference.

Dtypes are kept few on purpose: each (kernel, dtype) pair costs a Numba compile on a cold cache (mostly
the ones ONNX's node cases compile anyway, so a whole-suite run shares them).
"""
import numpy as np
import pytest
from op_check import check_op

from ge.errors import ShapeError
from ge.kernels import KernelContext, TensorSpec, lookup
from ge.kernels.registry import call

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the oracle's overflow / NaN warnings
rng = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# -- binary with broadcasting -----------------------------------------------------------------------

SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((5,), ()), ((), (5,)),
          ((1, 3, 1), (2, 1, 5)), ((64, 3), (3,)), ((2, 3, 4, 5), (3, 1, 1)), ((0, 3), (3,)),
          ((2, 1, 3, 1, 4, 2), (3, 1, 5, 1, 2))]  # several outer dims: the odometer carries


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_binary_broadcast(op, sa, sb):
    check_op(op, [randn(*sa), randn(*sb) + 3])


def test_int_div_truncates_and_mod():
    a = np.array([7, -7, 7, -7, 0, 9, -128], np.int32)
    b = np.array([2, 2, -2, -2, 3, -4, 3], np.int32)
    check_op("Div", [a, b])
    check_op("Mod", [a, b])
    check_op("Mod", [a, b], {"fmod": 1})


def test_float_mod():
    a = np.array([-4.3, 4.3, 5, -5, 7.5, 0], np.float32)
    b = np.array([2.1, -2.1, np.inf, np.inf, 2, 3], np.float32)
    check_op("Mod", [a, b], {"fmod": 1})
    check_op("Mod", [a, b])


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_compare(op):
    a = np.array([[1, 2, np.nan, 4], [4, 3, 2, 1]], np.float32)
    check_op(op, [a, np.array([2, 2, 2, np.nan], np.float32)])
    check_op(op, [np.float32(2), a])


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic(op):
    check_op(op, [rng.random((3, 4, 5)) > 0.5, rng.random((4, 1)) > 0.5])
    check_op("Equal", [rng.random((3, 4)) > 0.5, rng.random(4) > 0.5])


@pytest.mark.parametrize("dtype", [np.uint8, np.int32])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift(dtype, direction):
    x = np.array([16, 4, 1, 255 if dtype == np.uint8 else -8, 3, 5], dtype)
    y = np.array([1, 2, 3, 1, 40, 0], dtype)
    check_op("BitShift", [x, y], {"direction": direction})


@pytest.mark.parametrize("ta,tb", [(np.float32, np.float32), (np.float32, np.int64), (np.int32, np.float32)])
def test_pow_mixed_dtypes(ta, tb):
    a = np.array([[1, 2, 3], [4, 5, 6]], ta)
    check_op("Pow", [a, np.array([2, 0.5 if tb == np.float32 else 3, 3], tb)])
    check_op("Pow", [a, np.array(2, tb)])


def test_prelu():
    check_op("PRelu", [randn(2, 3, 4, 5), randn(3, 1, 1)])
    check_op("PRelu", [randn(2, 3, 4), randn(3, 4)])
    x, slope = randn(2, 3, 4), randn(3)  # 1-D slope placed at X's one dim of length 3
    got = check_op("PRelu", [x, slope])[0]
    np.testing.assert_allclose(got, np.where(x > 0, x, x * slope[:, None]))


@pytest.mark.parametrize("op", ["Sum", "Max", "Min", "Mean"])
@pytest.mark.parametrize("shapes", [[(3, 4)], [(3, 4), (4,)], [(2, 1, 4), (3, 1), (1,)]])
def test_variadic(op, shapes):
    inputs = [randn(*s) for s in shapes]
    if op == "Mean" and len(shapes) == 3:  # onnx.reference's Mean adds in place into the first input
        np.testing.assert_allclose(_run(op, inputs, {}), sum(inputs) / 3, rtol=1e-6)
    else:
        check_op(op, inputs)


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_max_min_nan_and_ints(op):
    check_op(op, [np.array([1, np.nan, 3], np.float32), np.array([np.nan, 2, 1], np.float32)])
    check_op(op, [np.array([1, -5, 3], np.int64), np.array([2], np.int64)])


@pytest.mark.parametrize("sc,sx,sy", [((2, 3), (2, 3), (2, 3)), ((1, 3), (2, 1), ()), ((4,), (3, 1), (1, 4)),
                                      ((3, 1), (3, 4), (4,)), ((2, 1, 4), (3, 1), (2, 3, 4))])
def test_where(sc, sx, sy):
    check_op("Where", [rng.random(sc) > 0.5, randn(*sx), randn(*sy)])
    check_op("Where", [rng.random(sc) > 0.5, randn(*sx).astype(np.int64), randn(*sy).astype(np.int64)])


def test_legacy_broadcast_axis():
    a, b = randn(2, 3, 4, 5), randn(3, 4)
    got = _run("Add", [a, b], {"broadcast": 1, "axis": 1}, opset=6)
    np.testing.assert_allclose(got, a + b[None, :, :, None])
    with pytest.raises(ShapeError):
        _run("Mul", [a, b], {}, opset=6)


# -- in place: the output buffer is an input ---------------------------------------------------------

def _run(op, arrays, attrs, opset=17, out=None):
    specs = [TensorSpec(a.shape, a.dtype) for a in arrays]
    ctx = KernelContext(op, "n", attrs, specs, [None] * len(arrays), opset)
    kernel = lookup(op, "", opset)
    launch = kernel.bind(ctx)
    out = np.empty(ctx.outputs[0].shape, ctx.outputs[0].dtype) if out is None else out
    call(launch, arrays, [out])
    return out


@pytest.mark.parametrize("op,shapes,which", [("Add", [(4, 5), (4, 5)], 0), ("Sub", [(4, 5), (4, 5)], 1),
                                              ("Mul", [(4, 5), (5,)], 0), ("Div", [(4, 1), (4, 5)], 1),
                                              ("Mul", [(5,), (4, 5)], 1), ("Max", [(4, 5), (4, 5)], 1),
                                              ("Sum", [(4, 5), (4, 5), (5,)], 0), ("Sigmoid", [(4, 5)], 0),
                                              ("Exp", [(4, 5)], 0), ("Relu", [(4, 5)], 0)])
def test_inplace(op, shapes, which):
    arrays = [randn(*s) for s in shapes]
    want = _run(op, [a.copy() for a in arrays], {})
    got = _run(op, arrays, {}, out=arrays[which])
    assert got is arrays[which]
    np.testing.assert_allclose(got, want, rtol=1e-6)


# -- unary ------------------------------------------------------------------------------------------

EDGES = np.array([-100, -20, -3, -1, -1e-3, -0.0, 0, 1e-4, 0.5, 1, 3, 20, 100, np.nan, np.inf, -np.inf],
                 np.float32)
ACTIVATIONS = [("Sigmoid", {}), ("Tanh", {}), ("LeakyRelu", {"alpha": 0.1}), ("Elu", {"alpha": 0.5}),
               ("Celu", {"alpha": 2.0}), ("Selu", {}), ("ThresholdedRelu", {"alpha": 0.7}),
               ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("HardSwish", {}), ("Softplus", {}),
               ("Softsign", {}), ("Mish", {}), ("Relu", {}), ("Gelu", {}), ("Gelu", {"approximate": "tanh"})]


@pytest.mark.parametrize("op,attrs", ACTIVATIONS)
def test_activation(op, attrs):
    opset = 20 if op == "Gelu" else 18
    check_op(op, [randn(3, 7) * 4], attrs, opset=opset)
    check_op(op, [EDGES], attrs, opset=opset, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("op", ["Sigmoid", "Tanh", "Elu", "Mish"])
def test_activation_float64(op):
    check_op(op, [randn(3, 7, dtype=np.float64) * 4], opset=18, rtol=1e-12, atol=0)


MATH = [("Exp", -80, 80), ("Log", 1e-30, 1e30), ("Sqrt", 0, 100), ("Reciprocal", 0.1, 10), ("Erf", -4, 4),
        ("Floor", -5, 5), ("Ceil", -5, 5), ("Sin", -7, 7), ("Cos", -7, 7), ("Tan", -1.5, 1.5),
        ("Asin", -1, 1), ("Acos", -1, 1), ("Atan", -9, 9), ("Sinh", -5, 5), ("Cosh", -5, 5),
        ("Asinh", -9, 9), ("Acosh", 1, 9), ("Atanh", -0.99, 0.99), ("Neg", -5, 5), ("Abs", -5, 5),
        ("Sign", -5, 5)]


@pytest.mark.parametrize("op,lo,hi", MATH)
def test_math(op, lo, hi):
    check_op(op, [rng.uniform(lo, hi, (4, 9)).astype(np.float32)])


def test_round_half_to_even_and_sign_edges():
    check_op("Round", [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, np.nan], np.float32)])
    check_op("Sign", [np.array([-2, 0, 3, np.nan], np.float32)])


@pytest.mark.parametrize("op", ["Relu", "Neg", "Abs", "Sign"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32])
def test_signed_ints(op, dtype):
    check_op(op, [np.array([-100, -1, 0, 1, 100], dtype)])


def _max_ulp(got, want):
    return (np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want).astype(np.float32))).max()


def test_fastmath_ulp():
    """fastmath's float32 exp, log, erf, expm1 (through Exp, Log, Erf, Elu, Tanh) against float64."""
    import math
    x = np.linspace(-86, 88.7, 200001, dtype=np.float32)
    assert _max_ulp(_run("Exp", [x], {}), np.exp(x.astype(np.float64))) <= 2
    x = np.exp(np.linspace(-103, 88.7, 200001)).astype(np.float32)  # subnormals up to near FLT_MAX
    assert _max_ulp(_run("Log", [x], {}), np.log(x.astype(np.float64))) <= 3
    x = np.linspace(-5, 5, 100001, dtype=np.float32)
    assert _max_ulp(_run("Erf", [x], {}), np.array([math.erf(v) for v in x.astype(np.float64)])) <= 3
    small = np.float32(10.0) ** -np.arange(1, 30, dtype=np.float32)  # expm1 keeps tiny inputs' accuracy
    np.testing.assert_allclose(_run("Elu", [-small], {"alpha": 1.0}), np.expm1(-small.astype(np.float64)),
                               rtol=3e-7)
    np.testing.assert_allclose(_run("Tanh", [small], {}), np.tanh(small.astype(np.float64)), rtol=3e-7)


def test_sigmoid_and_silu_on_exp_bounded():
    """Sigmoid (and the SiLU and Sigmoid epilogues) take fastmath's exp_bounded: within 2 ulp of float64 on
    the range where it is exp, saturated past it (sigmoid -> 0 and 1, SiLU -> v and -0), NaN kept."""
    from numba import njit

    from ge.kernels.epilogue import _silu
    from ge.kernels.fastmath import exp_bounded

    x = np.linspace(-86, 88.3, 200001, dtype=np.float32)
    got = njit(lambda a: np.array([exp_bounded(v) for v in a]))(x)
    assert _max_ulp(got, np.exp(x.astype(np.float64))) <= 1
    ends = np.array([-1e4, -200, -90, 90, 200, 1e4, np.inf, -np.inf, np.nan], np.float32)
    assert np.isnan(njit(lambda a: np.array([exp_bounded(v) for v in a]))(ends)[-1])
    sig = _run("Sigmoid", [ends], {})
    np.testing.assert_allclose(sig[:-1], 1 / (1 + np.exp(-ends[:-1].astype(np.float64))), rtol=0, atol=1e-37)
    assert np.isnan(sig[-1])
    one, zero = np.float32(1), np.float32(0)
    silu = np.array([_silu(v, zero, zero, zero, one) for v in ends[:6]])
    np.testing.assert_allclose(silu, [0, 0, 0, 90, 200, 1e4], rtol=1e-7, atol=1e-34)   # v / 2e38 far below 0
    assert np.isnan(_silu(np.float32(np.nan), zero, zero, zero, one))


def test_isnan_isinf():
    x = np.array([1, np.nan, np.inf, -np.inf, 0, -2], np.float32)
    check_op("IsNaN", [x])
    for pos in (0, 1):
        for neg in (0, 1):
            check_op("IsInf", [x], {"detect_positive": pos, "detect_negative": neg})


def test_not():
    check_op("Not", [rng.random((3, 5)) > 0.5])


@pytest.mark.parametrize("bounds", [(-0.5, 0.5), (-0.5, None), (None, 0.5), (None, None), (1.0, -1.0)])
@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_clip(bounds, dtype):
    x = (randn(3, 5) * 50 if dtype == np.int8 else randn(3, 5)).astype(dtype)
    scale = 50 if dtype == np.int8 else 1
    inputs = [x] + [None if b is None else np.array(b * scale, dtype) for b in bounds]
    while inputs[-1] is None and len(inputs) > 1:
        inputs.pop()
    check_op("Clip", inputs)
    check_op("Clip", inputs, const_inputs=(1, 2))


def test_clip_attributes():
    check_op("Clip", [randn(3, 5)], {"min": -0.5, "max": 0.3}, opset=6)
    check_op("Clip", [randn(3, 5)], {"max": 0.3}, opset=6)


# -- Cast ---------------------------------------------------------------------------------------------

CAST_VALUES = np.array([0, 1, -1, 2.75, -3.5, 100, 127], np.float64)


CASTS = [(np.float32, np.float64), (np.float64, np.float32), (np.float32, np.int32), (np.float32, np.bool_),
         (np.int64, np.float32), (np.int32, np.int8), (np.bool_, np.float32), (np.uint8, np.int64),
         (np.float32, np.float32)]


@pytest.mark.parametrize("src,dst", CASTS)
def test_cast(src, dst):
    from ge.ir.dtypes import to_onnx
    x = CAST_VALUES.astype(src) if src != np.uint8 else np.array([0, 1, 255], src)
    check_op("Cast", [x], {"to": to_onnx(dst)})
    check_op("CastLike", [x, np.zeros(1, dst)])


def test_cast_opset1_type_name():
    x = np.array([1.5, -2.5], np.float32)
    np.testing.assert_array_equal(_run("Cast", [x], {"to": "INT32"}, opset=1), x.astype(np.int32))


def test_unsupported_dtypes_are_shape_errors():
    with pytest.raises(ShapeError, match="float16"):
        _run("Sigmoid", [np.zeros(3, np.float16)], {})
    with pytest.raises(ShapeError, match="cannot cast"):
        _run("Cast", [np.zeros(3, np.float32)], {"to": 17})  # FLOAT8E4M3FN (float16 is a ge type now)
    with pytest.raises(ShapeError, match="different dtypes"):
        _run("Add", [np.zeros(3, np.float32), np.zeros(3, np.int32)], {})

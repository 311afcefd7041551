"""Activation kernels (float32/float64): Sigmoid, Tanh, the Relu variants, Softplus, Mish, Gelu, Shrink, Swish...

One kernel, `activation(x, out, op, alpha, beta)`, holds a flat loop per op (broadcast.map1), picked by op
code outside the loops; alpha and beta carry the op's attributes, cast to the input dtype. Constants are
made in the input's dtype (`type(v)(1)`) so float32 stays float32; scalar functions are plain @njit as
in elementwise.py (see there why). The exp-based ops use fastmath's exp / expm1 / log1p / erfc, which
vectorize in float32, in forms that neither overflow nor cancel: sigmoid from exp(-|x|), tanh from
expm1(-2|x|), Gelu as x/2 erfc(-x/sqrt 2), Gelu-tanh as x * sigmoid(2z), Mish without a log.

Blocks (AI cores): tiled as elementwise.py's kernels (a flat slice per block, broadcast.part), with the
per-op ns below deciding when a launch is worth a second block (Sigmoid from ~55K float32 elements, Gelu
from ~23K). Measured, 1x64x112x112 float32, one thread vs 2 blocks on 2 threads: Sigmoid 704 -> 428 us,
Gelu 1340 -> 733 us.
"""
from __future__ import annotations

from numba import njit

from .blocks import flat_launch
from .broadcast import map1 as _map
from .broadcast import part as _part
from .elementwise import float_infer
from .fastmath import erfc, exp, exp_bounded, expm1, log1p
from .registry import register


@njit
def _sigmoid(v, p, q):
    e = exp_bounded(-abs(v))  # never overflows; the negative side is e / (1 + e)
    r = type(v)(1) / (type(v)(1) + e)
    return r if v >= 0 else e * r


@njit
def _tanh(v, p, q):
    m = expm1(type(v)(-2) * abs(v))  # tanh|v| = -m / (2 + m), accurate near 0 as expm1 is
    t = -m / (type(v)(2) + m)
    return t if v >= 0 else -t


@njit
def _leaky_relu(v, p, q):
    return v if v >= 0 else v * p


@njit
def _elu(v, p, q):
    return v if v > 0 else p * expm1(v)


@njit
def _celu(v, p, q):
    return v if v > 0 else p * expm1(v / p)


@njit
def _selu(v, p, q):
    return q * (v if v > 0 else p * expm1(v))


@njit
def _thresholded_relu(v, p, q):
    return v if v > p else type(v)(0)


@njit
def _hard_sigmoid(v, p, q):
    y = p * v + q
    y = type(v)(1) if y > 1 else y
    return type(v)(0) if y < 0 else y


@njit
def _hard_swish(v, p, q):
    return v * _hard_sigmoid(v, p, q)


@njit(inline="always")  # too big for LLVM to inline: a call per element
def _softplus(v, p, q):
    return (v if v > 0 else type(v)(0)) + log1p(exp(-abs(v)))


@njit
def _softsign(v, p, q):
    return v / (type(v)(1) + abs(v))


@njit
def _mish(v, p, q):
    # tanh(log(1 + e)) = n / (n + 2) with n = e (e + 2); past v = 20 the ratio is 1 in float32
    e = exp(v if v < 20 else type(v)(20))
    n = e * (e + type(v)(2))
    return v * (n / (n + type(v)(2)))


@njit(inline="always")  # too big for LLVM to inline: a call per element
def _gelu(v, p, q):
    return type(v)(0.5) * v * erfc(v * type(v)(-0.7071067811865476))


@njit
def _silu(v, p, q):
    return v * _sigmoid(v, p, q)


@njit
def _gelu_tanh(v, p, q):
    # 0.5 v (1 + tanh z) = v * sigmoid(2z), which does not cancel for negative z
    z = type(v)(0.7978845608028654) * (v + type(v)(0.044715) * v * v * v)
    return v / (type(v)(1) + exp(type(v)(-2) * z))


@njit
def _shrink(v, p, q):
    return v - q if v > p else (v + q if v < -p else type(v)(0))


@njit
def _swish(v, p, q):
    return v * _sigmoid(p * v, p, q)


(SIGMOID, TANH, LEAKY_RELU, ELU, CELU, SELU, THRESHOLDED_RELU, HARD_SIGMOID, HARD_SWISH, SOFTPLUS,
 SOFTSIGN, MISH, GELU, GELU_TANH, SILU, SHRINK, SWISH) = range(17)


@njit(nogil=True, cache=True, error_model="numpy")
def activation(x, out, op, alpha, beta, block_idx, block_dim):
    x, out = _part(x, out, block_idx, block_dim)
    p, q = x.dtype.type(alpha), x.dtype.type(beta)
    if op == SIGMOID:
        _map(_sigmoid, x, out, p, q)
    elif op == TANH:
        _map(_tanh, x, out, p, q)
    elif op == LEAKY_RELU:
        _map(_leaky_relu, x, out, p, q)
    elif op == ELU:
        _map(_elu, x, out, p, q)
    elif op == CELU:
        _map(_celu, x, out, p, q)
    elif op == SELU:
        _map(_selu, x, out, p, q)
    elif op == THRESHOLDED_RELU:
        _map(_thresholded_relu, x, out, p, q)
    elif op == HARD_SIGMOID:
        _map(_hard_sigmoid, x, out, p, q)
    elif op == HARD_SWISH:
        _map(_hard_swish, x, out, p, q)
    elif op == SOFTPLUS:
        _map(_softplus, x, out, p, q)
    elif op == SOFTSIGN:
        _map(_softsign, x, out, p, q)
    elif op == MISH:
        _map(_mish, x, out, p, q)
    elif op == GELU:
        _map(_gelu, x, out, p, q)
    elif op == SILU:
        _map(_silu, x, out, p, q)
    elif op == SHRINK:
        _map(_shrink, x, out, p, q)
    elif op == SWISH:
        _map(_swish, x, out, p, q)
    else:
        _map(_gelu_tanh, x, out, p, q)


# ns per element, one thread, float32, 1x16x112x112, best of 40 (what a block of blocks.MIN_BLOCK_NS must
# hold; float64 runs libm, several times slower, so its launches tile later than they could)
_NS = {SIGMOID: 0.9, TANH: 1.1, LEAKY_RELU: 0.15, ELU: 0.8, CELU: 0.8, SELU: 0.8, THRESHOLDED_RELU: 0.15,
       HARD_SIGMOID: 0.15, HARD_SWISH: 0.2, SOFTPLUS: 3.2, SOFTSIGN: 0.2, MISH: 0.85, GELU: 2.2, GELU_TANH: 1.1,
       SILU: 1.0, SHRINK: 0.15, SWISH: 1.0}

_ACTIVATIONS = {  # op: (code, alpha, beta): attribute names with their defaults, or fixed values
    "Sigmoid": (SIGMOID, 0.0, 0.0), "Tanh": (TANH, 0.0, 0.0), "LeakyRelu": (LEAKY_RELU, ("alpha", 0.01), 0.0),
    "Elu": (ELU, ("alpha", 1.0), 0.0), "Celu": (CELU, ("alpha", 1.0), 0.0),
    "Selu": (SELU, ("alpha", 1.67326319217681884765625), ("gamma", 1.05070102214813232421875)),
    "ThresholdedRelu": (THRESHOLDED_RELU, ("alpha", 1.0), 0.0),
    "HardSigmoid": (HARD_SIGMOID, ("alpha", 0.2), ("beta", 0.5)), "HardSwish": (HARD_SWISH, 1 / 6, 0.5),
    "Softplus": (SOFTPLUS, 0.0, 0.0), "Softsign": (SOFTSIGN, 0.0, 0.0), "Mish": (MISH, 0.0, 0.0),
    "Shrink": (SHRINK, ("lambd", 0.5), ("bias", 0.0)),  # the spec's integer inputs are not supported
    "Swish": (SWISH, ("alpha", 1.0), 0.0),  # opset 24: x * sigmoid(alpha x)
}


def _prepare_activation(code, alpha, beta):
    def value(ctx, a):
        return float(ctx.attr(*a)) if isinstance(a, tuple) else a

    def prepare(ctx):
        return flat_launch(ctx, activation, (code, value(ctx, alpha), value(ctx, beta)), _NS[code])
    return prepare


for _op, (_code, _alpha, _beta) in _ACTIVATIONS.items():
    register(_op, infer=float_infer, inplace=((0, 0),))(_prepare_activation(_code, _alpha, _beta))


@register("Silu", domain="ge", infer=float_infer, inplace=((0, 0),))
def _prepare_silu(ctx):
    """x * sigmoid(x), made by recognize_activations from an exported Mul(x, Sigmoid(x))."""
    return flat_launch(ctx, activation, (SILU, 0.0, 0.0), _NS[SILU])


@register("Gelu", domain="ge", infer=float_infer, inplace=((0, 0),))
@register("Gelu", infer=float_infer, inplace=((0, 0),), since=20)
def _prepare_gelu(ctx):
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ctx.error(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    code = GELU if approximate == "none" else GELU_TANH
    return flat_launch(ctx, activation, (code, 0.0, 0.0), _NS[code])

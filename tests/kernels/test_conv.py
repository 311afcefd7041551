"""Conv, ConvTranspose and ge::FusedConv against onnx.reference (FusedConv: the Conv reference + a numpy
epilogue, since the reference does not know the "ge" domain)."""
import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator
from op_check import check_op, make_model, run_ge

rng = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# (x shape, w shape, attrs): every lowering (pointwise, im2col, direct) and attribute the op has
CONV_CASES = [
    ((1, 3, 9, 9), (4, 3, 3, 3), {}),
    ((2, 3, 9, 8), (4, 3, 3, 3), {"pads": [1, 0, 2, 1], "strides": [2, 1]}),
    ((1, 4, 10, 10), (6, 4, 3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2]}),
    ((1, 4, 8, 8), (6, 2, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),
    ((2, 6, 9, 9), (6, 1, 3, 3), {"group": 6, "pads": [1, 1, 1, 1]}),                # depthwise
    ((1, 4, 11, 11), (8, 1, 3, 3), {"group": 4, "strides": [2, 2], "dilations": [1, 2]}),  # x2 mult.
    ((1, 3, 8, 10), (3, 1, 3, 3), {"group": 3, "dilations": [1, 2], "pads": [0, 3, 1, 0]}),
    ((1, 2, 6, 9), (2, 1, 2, 5), {"group": 2, "pads": [1, 2, 0, 2]}),
    ((1, 5, 14, 13), (5, 1, 3, 3), {"group": 5, "strides": [2, 2], "pads": [1, 1, 1, 1]}),  # depthwise /2
    ((1, 3, 9, 8), (6, 1, 3, 3), {"group": 3, "strides": [2, 2], "pads": [0, 1, 2, 0]}),   # x2, /2, odd
    ((1, 2, 11, 12), (2, 1, 5, 5), {"group": 2, "pads": [2, 2, 2, 2]}),                  # depthwise 5x5
    ((1, 2, 70, 66), (2, 1, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),                  # several tiles
    ((1, 2, 71, 70), (2, 1, 3, 3), {"group": 2, "strides": [2, 2], "pads": [1, 0, 1, 1]}),
    ((1, 1, 200, 40), (1, 1, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),         # /2, two tiles
    ((1, 3, 9, 9), (4, 3, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 3, 8, 9), (4, 3, 4, 2), {"auto_pad": "SAME_LOWER", "strides": [3, 2]}),
    ((1, 3, 9, 9), (4, 3, 3, 3), {"auto_pad": "VALID", "strides": [2, 2], "kernel_shape": [3, 3]}),
    ((2, 8, 5, 6), (5, 8, 1, 1), {}),                                                # pointwise
    ((1, 8, 7, 7), (5, 8, 1, 1), {"strides": [2, 2]}),
    ((1, 3, 20, 20), (4, 3, 7, 7), {"strides": [2, 2], "pads": [3, 3, 3, 3]}),          # stem-like
    ((1, 3, 12), (4, 3, 3), {"pads": [1, 2], "strides": [2]}),                         # 1-D
    ((1, 2, 5, 6, 7), (3, 2, 3, 2, 3), {"pads": [1, 0, 1, 1, 1, 0], "strides": [1, 2, 2]}),  # 3-D
    ((1, 3, 9, 37), (3, 1, 3, 5), {"group": 3, "pads": [0, 2, 1, 0]}),  # depthwise rows of 3 vectors, padded one side
    ((1, 2, 12, 28), (2, 1, 5, 5), {"group": 2, "pads": [2, 2, 2, 2]}),  # depthwise straight from x (MBConv's 28)
    ((1, 2, 8, 32), (2, 1, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),   # ... rows of exactly two vectors
]


@pytest.mark.parametrize("xs,ws,attrs", CONV_CASES)
def test_conv(xs, ws, attrs):
    check_op("Conv", [rand(*xs), rand(*ws), rand(ws[0])], attrs, rtol=1e-4, atol=1e-4)


# SHIFTED (a GEMM on the zero-padded, phase-split input through a table of row offsets) for undilated 2-D
# and 1-D convs, IM2COL for dilated ones.
MODE_CASES = [
    ((1, 16, 5, 6), (32, 16, 1, 1), {}),
    ((2, 16, 7, 7), (20, 16, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 16, 9, 9), (16, 16, 3, 3), {"strides": [2, 2]}),
    ((1, 24, 9, 9), (24, 24, 1, 1), {"strides": [2, 2]}),
    ((1, 16, 20, 19), (7, 16, 3, 3), {"pads": [1, 0, 2, 1]}),
    ((1, 32, 6, 6), (32, 16, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),
    ((1, 16, 12), (17, 16, 3), {"pads": [1, 1]}),
    ((1, 16, 9, 9), (18, 16, 2, 4), {"pads": [0, 2, 1, 1]}),
    ((1, 16, 15, 16), (8, 16, 7, 7), {"strides": [2, 2], "pads": [3, 3, 3, 3]}),
    ((1, 16, 10, 11), (8, 16, 3, 5), {"strides": [3, 2], "pads": [1, 2, 0, 1]}),
    ((1, 3, 9, 9), (4, 3, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 16, 8, 8), (8, 16, 3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2]}),    # IM2COL: dilated
]


@pytest.mark.parametrize("xs,ws,attrs", MODE_CASES)
def test_conv_modes(xs, ws, attrs):
    check_op("Conv", [rand(*xs), rand(*ws), rand(ws[0])], attrs, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs,ws,attrs", CONV_CASES[:4] + MODE_CASES[4:6] + MODE_CASES[8:10] + [CONV_CASES[13]])
def test_conv_tiled(xs, ws, attrs, monkeypatch):
    """IM2COL and SHIFTED cut the output into row tiles when their buffers would be big: force tiny tiles."""
    from ge.kernels import conv
    monkeypatch.setattr(conv, "COL_ELEMS", 1)
    monkeypatch.setattr(conv, "GRID_ELEMS", 1)
    monkeypatch.setattr(conv, "GEMM_MIN_COLUMNS", 1)
    check_op("Conv", [rand(*xs), rand(*ws), rand(ws[0])], attrs, rtol=1e-4, atol=1e-4)


# IMPLICIT (conv_implicit.py: output channels across the lanes, positions in tiles of 8 and 4): 32 or more
# channels a group; in place without padding, a padded copy with it, a compact copy for strided 1x1; panels
# of 2 vectors and of 1 (48, 80 and 150 channels), channels past a group's end (150), 1 to 7 positions past
# the tiles of 8. The sessions run the weights packed (pack_conv_weights: IMPLICIT), the kernel called on
# the plain Conv the other lowerings: check_op holds both to the same bits.
IMPLICIT_CASES = [
    ((1, 16, 5, 6), (32, 16, 1, 1), {}),                                              # in place, 30 positions
    ((2, 8, 7, 7), (48, 8, 3, 3), {"pads": [1, 1, 1, 1]}),                            # 49: 6 tiles + 1
    ((1, 8, 9, 9), (80, 8, 3, 3), {"strides": [2, 2], "pads": [0, 0, 1, 1]}),         # end pads only
    ((1, 8, 11, 10), (150, 8, 2, 3), {"strides": [2, 1], "dilations": [2, 2], "pads": [1, 2, 0, 1]}),
    ((1, 64, 6, 6), (64, 16, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}),              # groups, 36
    ((1, 8, 13), (32, 8, 3), {"pads": [1, 1], "strides": [2]}),                       # 1-D, 7 positions
    ((1, 8, 14, 14), (32, 8, 1, 1), {"strides": [2, 2]}),                             # in place, strided
]


@pytest.mark.parametrize("xs,ws,attrs", IMPLICIT_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_implicit(xs, ws, attrs, dtype):
    check_op("Conv", [rand(*xs, dtype=dtype), rand(*ws, dtype=dtype), rand(ws[0], dtype=dtype)], attrs,
             const_inputs=(1, 2), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs,ws,attrs", IMPLICIT_CASES)
def test_conv_implicit_gives_the_other_lowerings_bits_in_any_row_tiles(xs, ws, attrs, monkeypatch):
    """The kernel on packed weights, with its own row tiles and with tiles of one output row (a tiny
    A_BYTES), and the unpacked Conv (SHIFTED / IM2COL / POINTWISE): the same FMA chains."""
    from ge.kernels import conv
    from ge.kernels.conv_implicit import pack
    x, w, b = rand(*xs), rand(*ws), rand(ws[0])
    (unpacked,) = run_ge(*make_model("Conv", [x, w, b], attrs))
    packed = make_model("FusedConv", [x, pack(w, attrs.get("group", 1)), b], dict(attrs, weight_shape=list(ws)),
                        domain="ge")
    assert np.array_equal(run_ge(*packed)[0], unpacked)
    monkeypatch.setattr(conv, "A_BYTES", 1)
    assert np.array_equal(run_ge(*packed)[0], unpacked)


def test_packed_weights_of_the_wrong_size_are_a_shape_error():
    from ge.errors import ShapeError
    x, w = rand(1, 8, 5, 5), rand(70, 8, 3, 3)
    model, feeds = make_model("FusedConv", [x, w.reshape(-1)], {"weight_shape": [64, 8, 3, 3]}, domain="ge")
    with pytest.raises(ShapeError, match="packed weights"):
        run_ge(model, feeds)


@pytest.mark.parametrize("xs,ws,attrs", MODE_CASES)
def test_equal_weights_give_bitwise_equal_channels(xs, ws, attrs):
    """Channel uniformity (gemm.py) holds in every lowering."""
    w = np.full(ws, 0.02, np.float32)
    model, feeds = make_model("Conv", [rand(*xs) * 1000, w], attrs)
    (got,) = run_ge(model, feeds)
    G = attrs.get("group", 1)  # channels of one group see the same input
    assert np.ptp(got.reshape(got.shape[0], G, -1, *got.shape[2:]), axis=2).max() == 0


def test_conv_no_bias_float64_opset1():
    check_op("Conv", [rand(1, 2, 6, 6, dtype=np.float64), rand(3, 2, 3, 3, dtype=np.float64)],
             {"strides": [2, 2]}, opset=1)


def numpy_act(y, act, params):
    a = {"Relu": lambda: np.maximum(y, 0), "LeakyRelu": lambda: np.where(y >= 0, y, params[0] * y),
         "Clip": lambda: np.clip(y, params[0], params[1]), "Sigmoid": lambda: 1 / (1 + np.exp(-y)),
         "HardSigmoid": lambda: np.clip(params[0] * y + params[1], 0, 1), "Tanh": lambda: np.tanh(y),
         "HardSwish": lambda: y * np.clip(y / 6 + 0.5, 0, 1), "": lambda: y}
    return a[act]().astype(y.dtype)


ACTS = [("", []), ("Relu", []), ("LeakyRelu", [0.2]), ("Clip", [-0.5, 0.75]), ("Sigmoid", []),
        ("HardSigmoid", [0.3, 0.4]), ("Tanh", []), ("HardSwish", [])]


def check_fused(op, fused_op, inputs, attrs, act, params, residual=None):
    """ge's fused op == act(reference op (+ residual))."""
    model, feeds = make_model(op, inputs, attrs)
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    if residual is not None:
        want = want + residual
        inputs = inputs + [None] * (3 - len(inputs)) + [residual]
    want = numpy_act(want, act, params)
    fused_attrs = dict(attrs, activation=act)
    if params:  # (an empty list has no ONNX attribute type)
        fused_attrs["activation_params"] = params
    model, feeds = make_model(fused_op, inputs, fused_attrs, domain="ge")
    (got,) = run_ge(model, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("act,params", ACTS)
@pytest.mark.parametrize("residual", [False, True])
def test_fused_conv(act, params, residual):
    x, w, b = rand(2, 4, 7, 7), rand(6, 4, 3, 3), rand(6)
    z = rand(2, 6, 7, 7) if residual else None
    check_fused("Conv", "FusedConv", [x, w, b], {"pads": [1, 1, 1, 1]}, act, params, z)


def test_fused_conv_residual_without_bias_depthwise():
    x, w = rand(1, 4, 6, 6), rand(4, 1, 3, 3)
    check_fused("Conv", "FusedConv", [x, w], {"group": 4, "pads": [1, 1, 1, 1]}, "Relu", [],
                rand(1, 4, 6, 6))


@pytest.mark.parametrize("act,params,residual", [("Clip", [0.0, 6.0], False), ("HardSwish", [], False),
                                                 ("Relu", [], True)])
def test_fused_depthwise_straight_from_x(act, params, residual):  # stride 1, 5x5, rows wider than a vector
    x, w, b = rand(1, 3, 8, 20), rand(3, 1, 5, 5), rand(3)
    check_fused("Conv", "FusedConv", [x, w, b], {"group": 3, "pads": [2, 2, 2, 2]}, act, params,
                rand(1, 3, 8, 20) if residual else None)


CONV_T_CASES = [
    ((1, 2, 4, 4), (2, 3, 3, 3), {}),
    ((2, 2, 4, 5), (2, 3, 3, 3), {"strides": [2, 2], "pads": [1, 0, 1, 1], "output_padding": [1, 0]}),
    ((1, 2, 4, 4), (2, 3, 3, 2), {"strides": [2, 3], "dilations": [2, 1]}),
    ((1, 2, 4, 4), (2, 3, 3, 3), {"strides": [2, 2], "output_shape": [9, 10]}),
    ((1, 2, 4, 4), (2, 3, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 4, 4), (2, 3, 4, 4), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 3, 5), (3, 2, 4), {"strides": [3], "pads": [1, 2]}),
    ((1, 2, 3, 4, 3), (2, 2, 2, 3, 2), {"strides": [2, 1, 2]}),
]


@pytest.mark.parametrize("xs,ws,attrs", CONV_T_CASES)
def test_conv_transpose(xs, ws, attrs):
    check_op("ConvTranspose", [rand(*xs), rand(*ws), rand(ws[1])], attrs, atol=1e-4)


def test_conv_transpose_groups():
    # onnx.reference mishandles groups with several channels each: compare per group instead
    x, w, b, G = rand(2, 4, 3, 3), rand(4, 3, 3, 3), rand(6), 2
    attrs = {"strides": [2, 2], "pads": [0, 1, 1, 0]}
    model, feeds = make_model("ConvTranspose", [x, w, b], dict(attrs, group=G))
    (got,) = run_ge(model, feeds)
    for g in range(G):
        part = [x[:, 2 * g:2 * g + 2], w[2 * g:2 * g + 2], b[3 * g:3 * g + 3]]
        m, f = make_model("ConvTranspose", part, attrs)
        np.testing.assert_allclose(got[:, 3 * g:3 * g + 3], ReferenceEvaluator(m).run(None, f)[0],
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bad", [
    ((1, 3, 5, 5), (4, 2, 3, 3), {}),                 # channels do not match
    ((1, 3, 2, 2), (4, 3, 3, 3), {}),                 # empty output
    ((1, 4, 5, 5), (4, 2, 3, 3), {"group": 3}),       # group does not divide
])
def test_conv_errors(bad):
    from ge.errors import ShapeError
    xs, ws, attrs = bad
    with pytest.raises(ShapeError, match="Conv node"):
        run_ge(*make_model("Conv", [rand(*xs), rand(*ws)], attrs))


@pytest.mark.parametrize("xs,ws,attrs", MODE_CASES[1:3] + MODE_CASES[4:11] + CONV_CASES[13:15])
def test_shifted_and_im2col_give_the_same_bits(xs, ws, attrs, monkeypatch):
    """Both sum over k = (channel, tap) in the same order (see conv.py)."""
    from ge.kernels import conv
    inputs = [rand(*xs), rand(*ws), rand(ws[0])]
    (shifted,) = run_ge(*make_model("Conv", inputs, attrs))
    monkeypatch.setattr(conv, "USE_SHIFTED", False)
    (im2col,) = run_ge(*make_model("Conv", inputs, attrs))
    assert np.array_equal(shifted, im2col)

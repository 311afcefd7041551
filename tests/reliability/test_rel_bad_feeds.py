"""Bad feeds on runtime v1 and v2: refused with InputError (or computed, for NaN/Inf, read-only, non-contiguous
and zero-size arrays); after every failure the same session's next run is correct. (test_session.py has the
basic v2 cases on a symbolic-dim model; these run both runtimes on a static model and add more.)"""
import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import helper, numpy_helper

import ge
from rel_models import fuzz_settings, make_model, vi

C = np.array([1, -2, 3, -4], np.float32)


def _model(shape):
    c = numpy_helper.from_array(C, "c")
    nodes = [helper.make_node("Add", ["x", "c"], ["t"], name="add"),
             helper.make_node("Relu", ["t"], ["y"], name="relu"),
             helper.make_node("Mul", ["t", "x2"], ["z"], name="mul")]
    return make_model(nodes, [vi("x", shape), vi("x2", shape)], [vi("y", None), vi("z", None)], [c])


def _expect(x, x2):
    t = x + C
    return np.maximum(t, 0), t * x2


@pytest.fixture(scope="module", params=["v1", "v2"])
def sess(request):
    with ge.Session(_model([2, 4]), runtime=request.param) as s:
        yield s


GOOD_X = np.linspace(-3, 3, 8, dtype=np.float32).reshape(2, 4)


def _check_usable(sess):
    x2 = np.full((2, 4), 2, np.float32)
    y, z = sess.run(None, {"x": GOOD_X, "x2": x2})
    for g, e in zip((y, z), _expect(GOOD_X, x2)):
        np.testing.assert_allclose(g, e, rtol=1e-6)


ONE = np.ones((2, 4), np.float32)
BAD = [
    ("missing", {"x": ONE}, "missing input 'x2'"),
    ("missing all", {}, "missing input"),
    ("extra", {"x": ONE, "x2": ONE, "bogus": ONE}, "unknown input.*bogus"),
    ("float64", {"x": ONE.astype(np.float64), "x2": ONE}, "dtype float64, expected float32"),
    ("int32", {"x": ONE, "x2": ONE.astype(np.int32)}, "dtype int32"),
    ("float16", {"x": ONE.astype(np.float16), "x2": ONE}, "dtype float16"),
    ("big-endian", {"x": ONE.astype(">f4"), "x2": ONE}, "dtype >f4"),
    ("object", {"x": ONE.astype(object), "x2": ONE}, "dtype object"),
    ("python list", {"x": ONE.tolist(), "x2": ONE}, "dtype float64"),  # no silent cast, as onnxruntime
    ("string", {"x": "not an array", "x2": ONE}, "dtype <U"),
    ("none", {"x": None, "x2": ONE}, "dtype object"),
    ("rank 1", {"x": np.ones(8, np.float32), "x2": ONE}, r"shape \[8\]"),
    ("rank 3", {"x": np.ones((1, 2, 4), np.float32), "x2": ONE}, r"shape \[1, 2, 4\]"),
    ("scalar", {"x": np.float32(1), "x2": ONE}, r"shape \[\]"),
    ("wrong dim", {"x": np.ones((2, 5), np.float32), "x2": ONE}, r"shape \[2, 5\]"),
    ("transposed", {"x": np.ones((4, 2), np.float32), "x2": ONE}, r"shape \[4, 2\]"),
    ("zero size", {"x": np.ones((0, 4), np.float32), "x2": ONE}, r"shape \[0, 4\]"),
]


@pytest.mark.parametrize("label,feeds,match", BAD, ids=[b[0] for b in BAD])
def test_bad_feed_is_input_error_and_session_survives(sess, label, feeds, match):
    with pytest.raises(ge.InputError, match=match):
        sess.run(None, feeds)
    _check_usable(sess)


@pytest.mark.parametrize("feeds", [[ONE, ONE], None, ("x", ONE)])
def test_feeds_not_a_dict(sess, feeds):
    with pytest.raises(ge.InputError, match="feeds must be a dict"):
        sess.run(None, feeds)
    _check_usable(sess)


def test_bound_output_of_wrong_shape(sess):
    with pytest.raises(ge.InputError, match="bound output 'y'"):
        sess.run(["y"], {"x": ONE, "x2": ONE}, outputs={"y": np.empty((3, 3), np.float32)})
    with pytest.raises(ge.InputError, match="not an output"):
        sess.run(None, {"x": ONE, "x2": ONE}, outputs={"nope": np.empty((2, 4), np.float32)})
    _check_usable(sess)


def _read_only():
    a = np.empty((2, 4), np.float32)
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("buf,match", [(_read_only(), "is read-only"), ([0.0] * 8, "must be a numpy array"),
                                       (None, "must be a numpy array")], ids=["read-only", "list", "none"])
def test_unusable_bound_output(sess, buf, match):
    with pytest.raises(ge.InputError, match=f"bound output 'y' {match}"):
        sess.run(["y"], {"x": ONE, "x2": ONE}, outputs={"y": buf})
    _check_usable(sess)


def test_bound_output_aliasing_the_input_or_not_contiguous(sess):
    want = _expect(GOOD_X, ONE)[0]
    x = GOOD_X.copy()
    (y,) = sess.run(["y"], {"x": x, "x2": ONE}, outputs={"y": x})  # y written over its own input
    assert y is x
    np.testing.assert_allclose(x, want)
    nc = np.empty((4, 2), np.float32).T
    (y,) = sess.run(["y"], {"x": GOOD_X, "x2": ONE}, outputs={"y": nc})
    assert y is nc
    np.testing.assert_allclose(nc, want)
    _check_usable(sess)


def _variants():
    base = np.linspace(-3, 3, 32, dtype=np.float32).reshape(4, 8)
    ro = GOOD_X.copy()
    ro.flags.writeable = False
    buf = np.zeros(8 * 4 + 1, np.uint8)[1:].view(np.float32).reshape(2, 4)  # misaligned by one byte
    buf[...] = GOOD_X
    return {"strided": base[::2, ::2], "fortran": np.asfortranarray(GOOD_X), "read-only": ro,
            "broadcast view": np.broadcast_to(GOOD_X[:1], (2, 4)), "misaligned": buf,
            "negative strides": GOOD_X[::-1, ::-1]}


@pytest.mark.parametrize("kind", list(_variants()))
def test_unusual_layouts_are_computed(sess, kind):
    x = _variants()[kind]
    xa = np.array(x, np.float32)
    before = xa.copy()
    x2 = np.full((2, 4), 0.5, np.float32)
    y, z = sess.run(None, {"x": x, "x2": x2})
    for g, e in zip((y, z), _expect(xa, x2)):
        np.testing.assert_allclose(g, e, rtol=1e-6)
    np.testing.assert_array_equal(np.array(x, np.float32), before)  # the feed is never written
    _check_usable(sess)


def test_nan_and_inf_are_computed_not_refused(sess):
    x = np.array([[np.nan, np.inf, -np.inf, 1], [0, -0.0, 3e38, -3e38]], np.float32)
    x2 = np.array([[1, 1, 1, np.inf], [np.nan, 2, 10, 10]], np.float32)
    with np.errstate(all="ignore"):
        want = _expect(x, x2)
        got = sess.run(None, {"x": x, "x2": x2})
    for g, e in zip(got, want):
        np.testing.assert_array_equal(g, e)  # NaN where numpy has NaN, +-inf where it has them
    _check_usable(sess)


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_zero_size_static_model(runtime):
    with ge.Session(_model([0, 4]), runtime=runtime) as s:
        e = np.zeros((0, 4), np.float32)
        y, z = s.run(None, {"x": e, "x2": e})
        assert y.shape == z.shape == (0, 4)
        with pytest.raises(ge.InputError):
            s.run(None, {"x": ONE, "x2": ONE})
        assert s.run(None, {"x": e, "x2": e})[0].shape == (0, 4)


def test_zero_size_and_changing_symbolic_dims_v2():
    with ge.Session(_model(["N", 4]), runtime="v2") as s:
        for n in (0, 3, 0, 1):
            x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
            y, z = s.run(None, {"x": x, "x2": x})
            for g, e in zip((y, z), _expect(x, x)):
                np.testing.assert_allclose(g, e)
        with pytest.raises(ge.InputError, match="with"):  # N binds once per run: x and x2 disagree
            s.run(None, {"x": np.ones((2, 4), np.float32), "x2": np.ones((3, 4), np.float32)})
        assert s.run(None, {"x": ONE, "x2": ONE})[1].shape == (2, 4)


DTYPES = [np.float32, np.float64, np.float16, np.int64, np.int32, np.uint8, np.bool_, np.complex64]


@fuzz_settings(150)
@given(shape=st.lists(st.integers(0, 5), max_size=4), dtype=st.sampled_from(DTYPES),
       which=st.sampled_from(["x", "x2"]), runtime=st.sampled_from(["v1", "v2"]))
def test_random_feeds_are_refused_or_exact(shape, dtype, which, runtime):
    s = _session(runtime)
    feeds = {"x": GOOD_X, "x2": ONE, which: np.zeros(shape, dtype)}
    if tuple(shape) == (2, 4) and dtype == np.float32:
        want = _expect(feeds["x"], feeds["x2"])
        for g, e in zip(s.run(None, feeds), want):
            np.testing.assert_allclose(g, e)
    else:
        with pytest.raises(ge.InputError, match=f"input '{which}'"):
            s.run(None, feeds)
    _check_usable(s)


@functools.cache
def _session(runtime):
    return ge.Session(_model([2, 4]), runtime=runtime)

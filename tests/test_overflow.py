"""overflow_nodes: float32 results past float16's range are found on sample feeds and kept in float32, so
allow_mix_precision gives no inf/NaN (the random-weight ResNet-50 / ShuffleNet light models' NaNs)."""
import numpy as np
import pytest
from pass_check import model, node, randn

import ge
from ge.errors import GEError
from ge.overflow import overflow_nodes

X = randn(1, 3, 6, 6)
# conv "c" (+ Relu) reaches ~1e5 > 65504; conv "y" brings it back to ~1e2 with mixed-sign weights, so an inf
# stored by "c" turns into inf - inf = NaN in "y"
M = model([node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"]),
           node("Conv", ["r", "w2"], ["y"], pads=[1, 1, 1, 1])],
          {"x": [1, 3, 6, 6]}, ["y"], {"w": randn(4, 3, 3, 3) * 3e4, "w2": randn(4, 4, 3, 3) * 1e-3})
MIX = "allow_mix_precision"


def _run(options=None):
    return ge.Session(M, runtime="v2", options=options).run(None, {"x": X})[0]


def test_overflowing_nodes_are_found_and_kept_in_float32():
    want = _run()
    assert np.abs(want).max() < 65504 / 2 and not np.isfinite(_run(ge.Options(precision_mode=MIX))).all()
    keep = overflow_nodes(M, {"x": X}, MIX)
    # the fused Conv+Relu "c" overflows; "y" reads its result, so it stays float32 too (a Cast would overflow)
    assert keep == ("OpName:c", "OpName:y")
    got = _run(ge.Options(precision_mode=MIX, keep_dtype=keep))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


def test_bfloat16_keeps_float32_range_and_a_bad_margin_is_refused():
    assert overflow_nodes(M, {"x": X}, "allow_mix_precision_bf16") == ()
    assert overflow_nodes(M, {"x": X}, "must_keep_origin_dtype") == ()
    with pytest.raises(GEError, match="margin must be >= 1"):
        overflow_nodes(M, {"x": X}, MIX, margin=0.5)


def test_random_weight_shufflenet_keeps_top1_in_allow_mix_precision():
    """The light model whose float16 run gave NaN (its float32 activations reach 4e7)."""
    from ge.zoo import with_random_weights
    m = with_random_weights("shufflenet")
    s = ge.Session(m, runtime="v2")
    feeds = {i.name: np.random.default_rng(0).standard_normal(i.shape).astype(np.float32) for i in s.get_inputs()}
    want = s.run(None, feeds)[0]
    assert np.isnan(ge.Session(m, runtime="v2", options=ge.Options(precision_mode=MIX)).run(None, feeds)[0]).any()
    keep = overflow_nodes(m, feeds, MIX)
    got = ge.Session(m, runtime="v2", options=ge.Options(precision_mode=MIX, keep_dtype=keep)).run(None, feeds)[0]
    assert np.isfinite(got).all() and got.argmax() == want.argmax()

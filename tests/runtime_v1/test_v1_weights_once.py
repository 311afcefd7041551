"""The plan's constants lent to runtime_v1's weights segment: one copy of the weights (issue 44's footprint)."""
import numpy as np
import pytest

import ge
import runtime_v1.weights
from v1_models import mlp, reference_mlp


@pytest.fixture(autouse=True)
def lend_every_plan(monkeypatch):
    """These tests lend a small MLP's weights: lending applies from runtime_v1.weights.LEND_BYTES."""
    monkeypatch.setattr(runtime_v1.weights, "LEND_BYTES", 0)


def _segment(sess):
    return sess._executor._instances.all[0].weights


def test_loaded_plan_constants_are_read_only_views_of_the_weights_segment_with_the_same_bytes():
    model, inits = mlp()
    plan = ge.compile(model)
    before = {t: a.copy() for t, a in plan.constants.items()}
    sess = ge.Session(plan, runtime="v1")
    seg = _segment(sess)
    for t, a in plan.constants.items():
        assert np.shares_memory(a, seg) and not a.flags.writeable
        np.testing.assert_array_equal(a, before[t])
    x = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], reference_mlp(x, inits), rtol=1e-5)
    sess.close()   # the segment goes back: the plan's constants get arrays of their own, the same bytes
    for t, a in plan.constants.items():
        assert not np.shares_memory(a, seg)
        np.testing.assert_array_equal(a, before[t])


def test_two_sessions_of_one_plan_run_the_same_after_the_first_closes():
    model, inits = mlp()
    plan = ge.compile(model)
    x = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    a = ge.Session(plan, runtime="v1")
    b = ge.Session(plan, runtime="v1")   # copies from a's lent views
    want = a.run(None, {"x": x})[0]
    a.close()
    np.testing.assert_array_equal(b.run(None, {"x": x})[0], want)
    c = ge.Session(plan, runtime="v1")   # after a's segment went back: the plan still holds the weights
    np.testing.assert_array_equal(c.run(None, {"x": x})[0], want)
    b.close()
    c.close()


def test_a_view_held_elsewhere_keeps_its_segment_readable():
    model, _ = mlp()
    plan = ge.compile(model)
    sess = ge.Session(plan, runtime="v1")
    held = {t: a for t, a in plan.constants.items()}   # e.g. a caller's reference taken while loaded
    want = {t: a.copy() for t, a in held.items()}
    sess.close()   # not released (its pages would read as zeros): kept while `held` reads it
    for t, a in held.items():
        np.testing.assert_array_equal(a, want[t])


def test_small_weights_are_copied_not_lent(monkeypatch):
    monkeypatch.setattr(runtime_v1.weights, "LEND_BYTES", 4 << 20)
    model, _ = mlp()
    plan = ge.compile(model)
    sess = ge.Session(plan, runtime="v1")
    assert not any(np.shares_memory(a, _segment(sess)) for a in plan.constants.values())
    sess.close()

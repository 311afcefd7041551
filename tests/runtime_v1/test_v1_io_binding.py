"""Zero copy: aligned inputs become their slot, bound outputs are computed in place, fresh outputs are
never views of the arena; outputs aliasing an input or a constant are copied (counted)."""
import numpy as np

import ge
from ge.plan import aligned_empty
from v1_models import mlp, reference_mlp


def _session():
    model, inits = mlp()
    return ge.Session(model, runtime="v1"), inits


def _aligned(x):
    """x in a 32-byte aligned buffer: GE binds only those zero copy (ge.plan.zero_copy_aligned)."""
    y = aligned_empty(x.shape, x.dtype)
    y[...] = x
    return y


def _misaligned(x):
    raw = np.empty(x.nbytes + 1, np.uint8)
    y = np.frombuffer(raw.data, np.uint8, x.nbytes, 1).view(x.dtype).reshape(x.shape)
    y[...] = x
    assert not y.flags.aligned
    return y


def test_aligned_input_is_bound_not_copied():
    sess, inits = _session()
    ex = sess._executor
    x = _aligned(np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32))
    y, z = sess.run(None, {"x": x})
    np.testing.assert_allclose(y, reference_mlp(x, inits), rtol=1e-5, atol=1e-5)
    st = ex.stats()
    assert (st["zero_copy_inputs"], st["copied_inputs"]) == (1, 0)
    slot = ex.model.io_slot[sess.plan.inputs[0]].slot
    assert ex._instances.all[0].bases[slot] == x.ctypes.data  # the kernels read the caller's array itself
    np.testing.assert_array_equal(z, x.reshape(-1))  # z aliases x: copied out, not a view of x
    assert not np.shares_memory(z, x)


def test_misaligned_input_is_copied():
    sess, inits = _session()
    x = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    y, _ = sess.run(None, {"x": _misaligned(x)})
    np.testing.assert_allclose(y, reference_mlp(x, inits), rtol=1e-5, atol=1e-5)
    st = sess._executor.stats()
    assert (st["zero_copy_inputs"], st["copied_inputs"]) == (0, 1)


def test_bound_output_is_written_in_place():
    sess, inits = _session()
    ex = sess._executor
    x = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    out = _aligned(np.full((2, 8), np.nan, np.float32))
    before = ex.stats()
    y, _ = sess.run(None, {"x": x}, outputs={"y": out})
    after = ex.stats()
    assert y is out
    np.testing.assert_allclose(out, reference_mlp(x, inits), rtol=1e-5, atol=1e-5)
    assert after["zero_copy_outputs"] == before["zero_copy_outputs"] + 1
    assert after["copied_outputs"] == before["copied_outputs"] + 1  # only z (it aliases the input)
    assert after["fresh_outputs"] == before["fresh_outputs"]


def test_unbindable_output_falls_back_to_a_copy():
    sess, inits = _session()
    x = np.random.default_rng(3).standard_normal((2, 8)).astype(np.float32)
    out = np.zeros((8, 2), np.float32).T  # right shape, not C-contiguous
    y, _ = sess.run(None, {"x": x}, outputs={"y": out})
    assert y is out
    np.testing.assert_allclose(out, reference_mlp(x, inits), rtol=1e-5, atol=1e-5)
    assert sess._executor.stats()["zero_copy_outputs"] == 0


def test_fresh_outputs_are_not_views_of_the_arena():
    sess, inits = _session()
    ex = sess._executor
    rng = np.random.default_rng(4)
    x1, x2 = (rng.standard_normal((2, 8)).astype(np.float32) for _ in range(2))
    y1, z1 = sess.run(None, {"x": x1})
    keep = y1.copy(), z1.copy()
    y2, z2 = sess.run(None, {"x": x2})
    np.testing.assert_array_equal(y1, keep[0])  # the second run did not overwrite the first's results
    np.testing.assert_array_equal(z1, keep[1])
    for a in (y1, z1, y2, z2):
        for inst in ex._instances.all:
            assert not np.shares_memory(a, inst.arena)
    assert y1 is not y2

"""runtime_v1 loading: static plans only, alias nodes give no task, native and fallback tasks mix, the
feature map can be re-bound between runs, Session(runtime="v1") works while "auto" stays on v2."""
import time

import numpy as np
import pytest

import ge
import runtime_v1
from ge.errors import GEError
from ge.models import bert_like
from ge.npu import Device
from v1_models import chain, mlp, reference_mlp
from ge.npu import thunk_cache, thunks


def test_auto_picks_v1_for_static_plans_and_v2_for_dynamic_ones():
    assert "v1" in ge.api.available_runtimes()
    model, _ = mlp()
    assert ge.Session(model).runtime == "v1"
    assert ge.Session(model, runtime="v2").runtime == "v2"
    assert ge.Session(bert_like(batch=1, seq="seq", vocab=50, max_seq=32)).runtime == "v2"


def test_dynamic_plan_is_refused_naming_v2():
    plan = ge.compile(bert_like(batch=1, seq="seq", vocab=50, max_seq=32))
    assert plan.is_dynamic
    with pytest.raises(GEError, match="runtime='v2'"):
        runtime_v1.load(plan)


def test_alias_nodes_give_no_task_and_load_uses_the_device():
    model, inits = mlp()
    plan = ge.compile(model)
    dev = Device(1 << 20)
    ex = runtime_v1.load(plan, dev)
    assert len(ex.model.tasks) == sum(1 for n in plan.nodes if n.launch is not None) < len(plan.nodes)
    assert dev.memory.owns(ex._instances.all[0].arena)
    x = np.ones((2, 8), np.float32)
    np.testing.assert_allclose(ex.run({plan.inputs[0]: x})[0], reference_mlp(x, inits), rtol=1e-5)
    ex.close()
    assert dev.in_use == 0


@pytest.mark.parametrize("forced", ["Relu,Abs", "all"])
def test_native_and_fallback_tasks_mix(monkeypatch, forced):
    plan = ge.compile(chain(40))
    x = np.linspace(-1, 1, 16).astype(np.float32)
    want = ge.Session(plan, runtime="v2").run(None, {"x": x})[0]
    monkeypatch.setenv("GE_V1_FALLBACK", forced)
    ex = runtime_v1.Executor(plan)
    assert ex.model.fallback_tasks == (40 if forced == "all" else 20)
    assert all(r == "forced by GE_V1_FALLBACK" for r in ex.model.fallback_reasons().values())
    np.testing.assert_array_equal(ex.run({plan.inputs[0]: x})[0], want)
    np.testing.assert_array_equal(ex.run({plan.inputs[0]: x.copy()})[0], want)


def test_feature_base_refresh_two_sessions_share_one_scratch_buffer():
    opts = ge.Options(feature_base_refreshable=True)
    assert ge.Options.from_dict({"ge.featureBaseRefreshable": "1"}).feature_base_refreshable
    a = ge.Session(chain(30, 64), runtime="v1", options=opts)
    model, inits = mlp(n=64)
    b = ge.Session(model, runtime="v1", options=opts)
    xa = np.linspace(-2, 2, 64).astype(np.float32)
    xb = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    want_a = ge.Session(chain(30, 64), runtime="v2").run(None, {"x": xa})[0]
    size = max(a._executor.feature_memory_size, b._executor.feature_memory_size)
    scratch = np.full(size, 0xFF, np.uint8)
    a._executor.update_feature_memory_base(scratch)
    b._executor.update_feature_memory_base(scratch)
    for _ in range(3):
        np.testing.assert_array_equal(a.run(None, {"x": xa})[0], want_a)
        np.testing.assert_allclose(b.run(None, {"x": xb})[0], reference_mlp(xb, inits), rtol=1e-4, atol=1e-4)
    assert a._executor._instances.all[0].bases[runtime_v1.model.FEATURE_MAP] == scratch.ctypes.data
    fixed = ge.Session(model, runtime="v1")
    with pytest.raises(GEError, match="feature_base_refreshable"):
        fixed._executor.update_feature_memory_base(scratch)


def test_closed_session_refuses_runs():
    model, _ = mlp()
    sess = ge.Session(model, runtime="v1")
    sess.close()
    with pytest.raises(GEError, match="closed"):
        sess.run(None, {"x": np.zeros((2, 8), np.float32)})


def test_thunk_encoding_and_source_agree():
    kinds = ((thunks.BUF, "float32"), (thunks.INT, "int64"), (thunks.FLOAT, "float64"),
             (thunks.BUF, "int64"), (thunks.INT, "bool"), (thunks.FLOAT, "float32"))
    assert thunks.layout(kinds) == ((0, -1), (3, -1), (-1, 0), (4, -1), (7, -1), (-1, 1))
    assert thunks.widths(kinds) == (8, 2)
    irow, frow = np.zeros(8, np.int64), np.zeros(2)
    thunks.encode(kinds, [(1, 512, 10), 7, 0.5, (2, 64, 3), True, 1.5], irow, frow)
    assert irow.tolist() == [1, 512, 10, 7, 2, 64, 3, 1] and frow.tolist() == [0.5, 1.5]
    src = thunks.source(thunks.Signature("ge.kernels.softmax", "softmax", kinds))
    assert "kernel(a0, ip[3], fp[0], a3, ip[7] != 0, T_float32(fp[1]))" in src
    with pytest.raises(thunks.ThunkError):
        thunks.scalar_kind("text")


def test_thunk_files_are_cached_per_signature():
    model, _ = mlp()
    ex = ge.Session(model, runtime="v1")._executor
    sigs = {t.sig for t in ex.model.tasks}
    for sig in sigs:
        assert (thunk_cache.generation_dir() / f"thunk_{sig.digest}.py").exists()
    again = runtime_v1.Executor(ex.plan)  # warm: every thunk is loaded already, at the same address
    assert {t.sig: a for st in again.model.streams for t, a in zip(st.native, st.addrs)} == {
        t.sig: a for st in ex.model.streams for t, a in zip(st.native, st.addrs)}


def test_a_long_chain_runs_as_native_tasks():
    # the per-node cost itself (v1 ~20 ns vs v2 ~0.5 us) is measured in bench/test_runtime_v1.py, not here
    plan = ge.compile(chain(1000))
    v1, v2 = runtime_v1.Executor(plan), ge.Session(plan, runtime="v2")._executor
    feeds = {plan.inputs[0]: np.linspace(-1, 1, 16).astype(np.float32)}
    np.testing.assert_array_equal(v1.run(feeds)[0], v2.run(feeds)[0])
    stats = v1.stats()
    assert stats["native_tasks"] == 1000 and stats["fallback_tasks"] == 0


def test_kernel_error_names_the_node_and_the_session_stays_usable():
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Gather", ["x", "i"], ["y"], name="pick")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 3]),
                           helper.make_tensor_value_info("i", TensorProto.INT64, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    sess = ge.Session(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), runtime="v1")
    assert sess._executor.model.native_tasks == 1
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    with pytest.raises(ge.errors.ExecutionError, match="Gather node 'pick'.*IndexError"):
        sess.run(None, {"x": x, "i": np.array([0, 7], np.int64)})
    np.testing.assert_array_equal(sess.run(None, {"x": x, "i": np.array([4, -5], np.int64)})[0], x[[4, 0]])


def test_thunk_generations_are_pruned_and_nothing_else(tmp_path, monkeypatch):
    """Each kernel library gets its own thunk folder; the files ge recorded in its manifests go away when
    untouched for a day, anything else in the cache folder stays, however old (even named like ge's)."""
    import os

    from ge.npu import thunk_cache
    stale = tmp_path / "0123456789abcdef"   # a generation ge made and recorded, with a thunk it wrote
    stale.mkdir()
    (stale / thunk_cache.MARKER).write_text("")
    (stale / ("thunk_" + "cd" * 10 + ".py")).write_text("")
    thunk_cache.record(stale, "thunk_" + "cd" * 10 + ".py")
    thunk_cache.record(tmp_path, stale.name)
    loose = tmp_path / ("thunk_" + "ab" * 10 + ".py")   # named like a thunk, in no manifest: kept (issue 46)
    loose.write_text("")
    marked = tmp_path / "00000000deadbeef"   # ge's marker, but ge never recorded it: kept
    marked.mkdir()
    (marked / thunk_cache.MARKER).write_text("")
    users = [tmp_path / "fedcba9876543210", tmp_path / "notes.txt", tmp_path / "thunk_mine.py", loose, marked]
    users[0].mkdir()   # named like a generation, but no marker: not ge's
    users[1].write_text("mine")
    users[2].write_text("mine")
    old = time.time() - 2 * thunk_cache.STALE_SECONDS
    for p in (stale, *users):
        os.utime(p, (old, old))
    monkeypatch.setattr(thunk_cache, "cache_dir", lambda: tmp_path)
    thunk_cache.generation_dir.cache_clear()
    try:
        current = thunk_cache.generation_dir()
        assert current.parent == tmp_path and current.name == thunk_cache.library_hash()[:16]
        assert not stale.exists() and all(p.exists() for p in users)
    finally:
        thunk_cache.generation_dir.cache_clear()


def test_a_cache_folder_others_can_write_is_refused(tmp_path, monkeypatch):
    import os

    from ge.npu import thunk_cache
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("GE_THUNK_CACHE", str(shared))
    thunk_cache.cache_dir.cache_clear()
    try:
        with pytest.raises(thunk_cache.ThunkCacheError, match="not this user's own"):
            thunk_cache.cache_dir()
        fresh = tmp_path / "fresh"
        monkeypatch.setenv("GE_THUNK_CACHE", str(fresh))
        thunk_cache.cache_dir.cache_clear()
        assert thunk_cache.cache_dir() == fresh and (os.stat(fresh).st_mode & 0o777) == 0o700
    finally:
        thunk_cache.cache_dir.cache_clear()

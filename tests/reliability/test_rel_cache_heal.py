"""A cache that heals itself and prunes only its own files (issue 46, items 4 and 7).

- Pruning GE_THUNK_CACHE deletes only what ge's manifests list: a user's file named like a thunk, or a
  folder bearing ge's generation marker (with a precious.txt), stays.
- A refused thunk cache folder is said (one CacheWarning naming it, Session.stats()["thunk_cache"]), not a
  silent move of every task to the Python fallback; a damaged thunk file is quarantined and rebuilt.
- An empty Numba index file (.nbi) no longer breaks every later process (EOFError: Ran out of input): it is
  quarantined, the function compiles again, one warning names it."""
import os
import time

import pytest

from ge.npu import thunk_cache
from limited import GIB, run_limited

DAY = 24 * 3600


def _old(*paths):
    t = time.time() - 2 * DAY
    for p in paths:
        os.utime(p, (t, t))


def test_pruning_deletes_only_what_ge_recorded(tmp_path):
    base = tmp_path
    # a stale generation ge made and recorded, holding one thunk ge wrote, Numba's cache of it and a user's file
    mixed = base / "0123456789abcdef"
    (mixed / "__pycache__").mkdir(parents=True)
    ours = "thunk_" + "a" * 20 + ".py"
    (mixed / ours).write_text("# ge's\n")
    (mixed / "__pycache__" / ("thunk_" + "a" * 20 + ".thunk-12.py311.nbi")).write_bytes(b"x")
    (mixed / "precious.txt").write_text("mine")
    (mixed / thunk_cache.MARKER).write_text("ge")
    thunk_cache.record(mixed, ours)
    # a stale generation of ge's only files: it goes entirely
    clean = base / "fedcba9876543210"
    clean.mkdir()
    (clean / ours).write_text("# ge's\n")
    (clean / thunk_cache.MARKER).write_text("ge")
    thunk_cache.record(clean, ours)
    for name in (mixed.name, clean.name):
        thunk_cache.record(base, name)
    # what only looks like ge's: a folder with the marker ge never recorded, a loose thunk-named file
    looks = base / "00000000deadbeef"
    looks.mkdir()
    (looks / thunk_cache.MARKER).write_text("ge")
    (looks / "precious.txt").write_text("mine")
    (looks / ours).write_text("# mine\n")
    loose = base / ("thunk_" + "b" * 20 + ".py")
    loose.write_text("# mine\n")
    _old(*(p for p in base.rglob("*")), mixed, clean, looks)

    gone = thunk_cache.prune(base, keep="1111111111111111")

    assert not clean.exists()
    assert (mixed / "precious.txt").read_text() == "mine" and not (mixed / ours).exists()
    assert not (mixed / "__pycache__").exists()
    assert (looks / "precious.txt").exists() and (looks / ours).exists() and (looks / thunk_cache.MARKER).exists()
    assert loose.exists()
    assert sorted(p.name for p in gone) == sorted([ours, ours, "thunk_" + "a" * 20 + ".thunk-12.py311.nbi"])


def test_fresh_generations_are_kept(tmp_path):
    gen = tmp_path / "0123456789abcdef"
    gen.mkdir()
    (gen / ("thunk_" + "a" * 20 + ".py")).write_text("x")
    thunk_cache.record(gen, "thunk_" + "a" * 20 + ".py")
    thunk_cache.record(tmp_path, gen.name)
    assert thunk_cache.prune(tmp_path, keep="other") == [] and gen.exists()


_RUN_V1 = """
    import warnings
    import numpy as np
    import ge
    from rel_models import relu_chain
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with ge.Session(relu_chain([4, 4], 2), runtime="v1") as s:
            y = s.run(None, {"x": np.full((4, 4), -1.0, np.float32)})[0]
            st = s.stats()
    _report(ok=bool((y == 0.5).all()), fallback=st["fallback_tasks"], native=st["native_tasks"],
            cache=st["thunk_cache"], warnings=[str(x.message) for x in w if x.category.__name__ == "CacheWarning"])
"""


def test_a_refused_thunk_cache_is_said_not_silent(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o777)   # writable by others: ge imports code from it, so it refuses it
    r = run_limited(_RUN_V1, cap=8 * GIB, env={"GE_THUNK_CACHE": str(folder)})
    assert r.get("ok") and r["fallback"] > 0, r
    assert len(r["warnings"]) == 1 and str(folder) in r["warnings"][0] and "slower Python path" in r["warnings"][0]
    assert r["cache"] == r["warnings"]


def test_a_damaged_thunk_file_is_rebuilt(tmp_path):
    first = run_limited(_RUN_V1, cap=8 * GIB, env={"GE_THUNK_CACHE": str(tmp_path)})
    assert first.get("ok") and first["fallback"] == 0 and first["cache"] == [], first
    thunks = sorted(tmp_path.glob("*/thunk_*.py"))
    assert thunks
    thunks[0].write_text("import nothing_at_all  # damaged\n")
    again = run_limited(_RUN_V1, cap=8 * GIB, env={"GE_THUNK_CACHE": str(tmp_path)})
    assert again.get("ok") and again["fallback"] == 0, again
    assert len(again["warnings"]) == 1 and str(thunks[0]) in again["warnings"][0]
    assert list(thunks[0].parent.glob(thunks[0].name + ".*.damaged"))


_MODULE = """
from numba import njit

@njit(cache=True)
def twice(x):
    return 2 * x
"""

_CALL = """
    import sys, warnings
    sys.path.insert(0, {folder!r})
    if {with_ge}:
        import ge
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        import healmod
        _report(value=healmod.twice(21), warnings=[str(x.message) for x in w])
"""


def test_an_empty_numba_index_is_quarantined_and_recompiled(tmp_path):
    (tmp_path / "healmod.py").write_text(_MODULE)
    call = lambda with_ge: run_limited(_CALL.format(folder=str(tmp_path), with_ge=with_ge))  # noqa: E731
    assert call(True)["value"] == 42
    index, = (tmp_path / "__pycache__").glob("healmod.twice-*.nbi")
    index.write_bytes(b"")
    control = call(False)   # Numba alone: every process fails on it
    assert control.get("error") == "EOFError", control
    healed = call(True)
    assert healed.get("value") == 42, healed
    assert len(healed["warnings"]) == 1 and str(index) in healed["warnings"][0] and "EOFError" in healed["warnings"][0]
    assert list(index.parent.glob(index.name + ".*.damaged"))
    assert call(True)["warnings"] == []   # the index was written again

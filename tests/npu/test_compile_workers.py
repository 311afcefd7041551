"""ge/npu/compile_workers.py: a cold plan's kernels compiled in worker processes into the disk cache.

Each cold case runs in fresh processes with a temporary NUMBA_CACHE_DIR and GE_THUNK_CACHE (the shared cache is
neither read nor written) and without PYTEST_XDIST_WORKER (under which no worker starts)."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ge.errors import GEError
from ge.npu import compile_workers
from ge.npu.compile_jobs import KernelJob, describe, rebuild

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# a small plan: the elementwise and strided-copy kernels the suite compiles anyway, each its own function
_PLAN = '''
import json, sys
import numpy as np
from numba.core import event
from onnx import TensorProto, helper

compiles = []
class Compiles(event.Listener):
    def on_start(self, ev):
        pass
    def on_end(self, ev):
        compiles.append(getattr(ev.data.get("dispatcher"), "__name__", "?"))
event.register("numba:compile", Compiles())

import ge
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 4])
nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Transpose", ["a"], ["b"], perm=[1, 0]),
         helper.make_node("Neg", ["b"], ["y"])]
model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
feed = np.arange(32, dtype=np.float32).reshape(4, 8) - 10
outs = {rt: ge.Session(model, runtime=rt).run(None, {"x": feed})[0].tolist() for rt in sys.argv[1].split(",")}
print(json.dumps({"outs": outs, "compiles": compiles}))
'''


def _env(tmp_path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    env.update(PYTHONPATH=ROOT, NUMBA_CACHE_DIR=str(tmp_path / "numba"), GE_THUNK_CACHE=str(tmp_path / "thunks"),
               GE_PROGRESS="1", GE_PROGRESS_EVERY="0", **extra)
    return env


def _run(code: str, args: list, env: dict) -> tuple[dict, str]:
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def test_a_cold_plan_compiled_by_workers_runs_and_a_fresh_process_then_compiles_nothing(tmp_path):
    (tmp_path / "thunks").mkdir(mode=0o700)
    env = _env(tmp_path, GE_COMPILE_WORKERS="1")
    cold, told = _run(_PLAN, ["v2,v1"], env)
    want = (-np.maximum(np.arange(32, dtype=np.float32).reshape(4, 8) - 10, 0).T).tolist()
    assert cold["outs"] == {"v2": want, "v1": want}
    assert "(worker 1:" in told and "(here:" in told   # runtime_v2's warm-up shared out, told as it went
    assert "(2 compiled)" in told
    warm, told = _run(_PLAN, ["v2,v1"], env)   # a fresh process: everything from the disk cache
    assert warm["outs"] == cold["outs"]
    assert warm["compiles"] == [] and "worker" not in told and "from cache" in told


# a user's kernels, in a module whose import needs what only the asking process set up: a worker cannot
# import it, fails, and says so; the asking process compiles them itself
_USER = '''
import _set_up_at_run_time   # noqa: F401 - a module object the script made, no file
from numba import njit


@njit(cache=True)
def first(x):
    return x * 2.0 + 1.0


@njit(cache=True)
def second(x):
    return x - 3
'''

_FAILING = '''
import json, logging, sys, types
sys.modules["_set_up_at_run_time"] = types.ModuleType("_set_up_at_run_time")
sys.path.insert(0, sys.argv[1])
import numpy as np
from numba import typeof
from ge.npu.compile_jobs import KernelJob
from ge.npu.compile_workers import compile_ahead
import user_kernels as uk

logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
jobs = [KernelJob(uk.first, (typeof(1.5),)), KernelJob(uk.second, (typeof(np.int64(4)),))]
told = []
ahead = compile_ahead(jobs, lambda what, cached: told.append(what), 1)
for job in jobs:          # the caller's own loop: what no worker compiled, compiled here
    job.compile()
print(json.dumps({"ahead": sorted(j.name for j in ahead), "told": told, "first": uk.first(1.5),
                  "second": uk.second(4), "misses": [sum(j.fn.stats.cache_misses.values()) for j in jobs]}))
'''


def test_a_failing_worker_is_reported_once_and_this_process_compiles_its_kernels(tmp_path):
    (tmp_path / "user_kernels.py").write_text(textwrap.dedent(_USER))
    out, err = _run(_FAILING, [str(tmp_path)], _env(tmp_path))
    assert (out["first"], out["second"]) == (4.0, 1)
    assert err.count("compile worker 1 failed") == 1 and "No module named '_set_up_at_run_time'" in err
    assert out["ahead"] == ["user_kernels.first"] and len(out["told"]) == 1 and "first (here: " in out["told"][0]
    assert sorted(out["misses"]) == [1, 1]   # each compiled once, in this process (none loaded from a worker)


def _user_jobs(tmp_path):
    import types as pytypes
    sys.modules.setdefault("_set_up_at_run_time", pytypes.ModuleType("_set_up_at_run_time"))
    (tmp_path / "user_kernels_off.py").write_text(textwrap.dedent(_USER))
    sys.path.insert(0, str(tmp_path))
    try:
        import user_kernels_off as uk
    finally:
        sys.path.remove(str(tmp_path))
    from numba import typeof
    return [KernelJob(uk.first, (typeof(1.5),)), KernelJob(uk.second, (typeof(np.int64(4)),))]


@pytest.mark.parametrize("env, option", [({"PYTEST_XDIST_WORKER": "gw0"}, 2), ({"GE_COMPILE_WORKERS": "0"}, -1),
                                         ({}, 0)])
def test_no_worker_starts_under_xdist_or_when_turned_off(tmp_path, monkeypatch, env, option):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("GE_COMPILE_WORKERS", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert compile_workers.worker_count(option) == (0, "PYTEST_XDIST_WORKER" not in env)
    jobs = _user_jobs(tmp_path)
    assert all(j.missing() for j in jobs)
    assert compile_workers.compile_ahead(jobs, lambda *a: None, option) == set()
    assert all(j.missing() for j in jobs)   # nothing compiled, by anyone


def test_auto_takes_the_idle_cpus_only(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("GE_COMPILE_WORKERS", raising=False)
    cpus = compile_workers.usable_cpus()
    if cpus < 2:
        pytest.skip("one usable CPU: never a worker (test_no_worker_starts_... covers it)")
    assert compile_workers.worker_count(-1, load=1.0) == (min(cpus - 1, compile_workers.MAX_WORKERS), False)
    assert compile_workers.worker_count(-1, load=cpus + 1.0) == (0, False)   # a busy machine: none
    assert compile_workers.worker_count(2, load=cpus + 10.0) == (2, True)     # asked for: the load aside


def test_auto_starts_workers_only_when_they_pay():
    assert not compile_workers.pays([3.0, 3.0], 1)            # two small kernels: a worker's start eats the gain
    assert compile_workers.pays([40.0, 12.0, 9.0, 6.0, 4.0], 1)   # ResNet-50's five thunks
    assert not compile_workers.pays([40.0], 3)
    assert compile_workers.makespan([40.0, 12.0, 9.0, 6.0, 4.0], 2) == 40.0


def test_argument_types_survive_their_description():
    from numba import typeof
    from numba.core.types import BaseTuple
    ro = np.zeros(3, np.float32)
    ro.flags.writeable = False
    for t in (typeof(np.zeros(4, np.int64)), typeof(ro), typeof(np.zeros((2, 3), np.uint16)), typeof(True),
              typeof(np.int32(3)), typeof(1.5), BaseTuple.from_types([typeof(np.zeros(2)), typeof(np.zeros(2))]),
              BaseTuple.from_types([typeof(1), typeof(np.zeros(2, np.bool_))])):
        assert rebuild(json.loads(json.dumps(describe(t)))) == t


def test_the_option_is_checked():
    import ge
    assert ge.Options(compile_workers=3).compile_workers == 3
    with pytest.raises(GEError, match="compile_workers"):
        ge.Options(compile_workers=-2)


def test_the_progress_names_what_the_workers_compile():
    import io
    import time

    from ge.npu import progress as npu_progress
    from ge.progress_bar import Progress
    out = io.StringIO()
    with Progress(stream=out, interval=0.02, every=0.05):   # piped: plain lines while work is open
        with npu_progress.step("compiling kernels", 2) as advance:
            advance("pool_plane.pool2d (here: 1.0 s)", False)
            npu_progress.noter()("workers compiling conv.conv")
            time.sleep(0.5)
    assert "compiling kernels  1/2" in out.getvalue() and "workers compiling conv.conv" in out.getvalue()
    assert npu_progress.noter()("nobody listens") is None

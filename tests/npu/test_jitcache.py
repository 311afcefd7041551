"""ge/npu/jitcache.py: two processes meeting a cold cache compile a grouped function once; the other waits and
loads it (issue 44: pytest-xdist's workers compiled the same kernels side by side)."""
import json
import os
import subprocess
import sys
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_MODULE = '''
from numba import njit


@njit(cache=True)
def work(n):
    s = 0.0
    for i in range(n):
        s += (i % 7) * 0.5 - (i % 3)
    return s
'''

# one process: the temp module joins a jitcache group, waits for the go file, then calls the function once
_CHILD = '''
import json, os, sys, time
from pathlib import Path
from ge.npu import jitcache
folder = Path(sys.argv[1])
jitcache.GROUPS["test"] = lambda: [folder / "grouped.py"]
jitcache._group_of.cache_clear()
sys.path.insert(0, str(folder))
import grouped
(folder / f"ready{sys.argv[2]}").touch()
while not (folder / "go").exists():
    time.sleep(0.005)
import numpy as np
value = grouped.work(getattr(np, sys.argv[3])(1000) if len(sys.argv) > 3 else 1000)
st = grouped.work.stats
print(json.dumps({"value": value, "hits": sum(st.cache_hits.values()), "misses": sum(st.cache_misses.values())}))
'''


def _run_two(folder, types=()) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, str(folder), str(k), *types[k:k + 1]],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for k in range(2)]
    deadline = time.monotonic() + 300
    while not all((folder / f"ready{k}").exists() for k in range(2)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.01)
    (folder / "go").touch()   # both compile at once, give or take a few milliseconds
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]


def test_two_processes_on_a_cold_cache_compile_once(tmp_path):
    (tmp_path / "grouped.py").write_text(textwrap.dedent(_MODULE))
    first = _run_two(tmp_path)
    assert first[0]["value"] == first[1]["value"]
    assert sorted((r["misses"], r["hits"]) for r in first) == [(0, 1), (1, 0)]   # one compiled, one loaded
    for k in range(2):
        (tmp_path / f"ready{k}").unlink()
    (tmp_path / "go").unlink()
    again = _run_two(tmp_path)   # warm: both load, the index kept its one entry
    assert [(r["misses"], r["hits"]) for r in again] == [(0, 1), (0, 1)]


def test_two_processes_compiling_two_specializations_of_one_function_keep_both(tmp_path):
    """Each specialization has its own lock (a callee two kernels share, with their own types, compiles in two
    processes side by side); the index write is one process at a time, so neither entry is lost."""
    (tmp_path / "grouped.py").write_text(textwrap.dedent(_MODULE))
    first = _run_two(tmp_path, ("int32", "int64"))
    assert [(r["misses"], r["hits"]) for r in first] == [(1, 0), (1, 0)] and first[0]["value"] == first[1]["value"]
    for k in range(2):
        (tmp_path / f"ready{k}").unlink()
    (tmp_path / "go").unlink()
    again = _run_two(tmp_path, ("int64", "int32"))   # each process now finds the other's specialization
    assert [(r["misses"], r["hits"]) for r in again] == [(0, 1), (0, 1)]


def test_a_kernel_module_is_stamped_by_the_kernel_modules_it_imports(tmp_path):
    import shutil
    from pathlib import Path

    from ge.npu import jitcache
    kernels = Path(jitcache.__file__).resolve().parents[1] / "kernels"
    for f in kernels.glob("*.py"):
        shutil.copy(f, tmp_path / f.name)
    closure = {m: {p.stem for p in jitcache.kernel_closure(tmp_path / f"{m}.py")} for m in ("conv", "gemm", "softmax")}
    assert {"conv", "conv_lowering", "conv_implicit", "conv_depthwise", "gemm", "microkernel"} <= closure["conv"]
    assert "conv" not in closure["gemm"] and "gemm" not in closure["softmax"]
    stamps = {m: jitcache._stamp(jitcache.kernel_closure(tmp_path / f"{m}.py")) for m in closure}
    with open(tmp_path / "gemm.py", "a") as f:   # an edit of the GEMM: the convs compile it in, softmax does not
        f.write("\n# edited\n")
    after = {m: jitcache._stamp(jitcache.kernel_closure(tmp_path / f"{m}.py")) for m in closure}
    assert after["gemm"] != stamps["gemm"] and after["conv"] != stamps["conv"]
    assert after["softmax"] == stamps["softmax"]
    # every module of the library is stamped by its closure, itself included
    real = [f for f in kernels.glob("*.py") if f.name != "__init__.py"]
    assert all(f in jitcache.kernel_closure(f) for f in real)
    assert jitcache.source_stamp(str(kernels / "gemm.py")) == jitcache._stamp(jitcache.kernel_closure(kernels / "gemm.py"))


def test_stamping_the_kernel_library_parses_each_module_once():
    """Every kernel module's stamp walks its imports' imports; each module is parsed once for all of them
    (429 parses of ~70 modules made `import ge` 5.1 s, 4.7 of them in ast). In a fresh process: other tests
    here stamp modules of their own."""
    code = ("import ge.kernels; from ge.npu import jitcache; i = jitcache._kernel_imports.cache_info(); "
            "print(i.misses, i.hits, len(list((jitcache._ROOT / 'ge' / 'kernels').glob('*.py'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    misses, hits, modules = map(int, out.split())
    assert misses <= modules and hits > 0

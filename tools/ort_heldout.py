"""The held-out measurement of issue 45: onnxruntime's own Python API usage (its documented examples and
its Python API tests, CPU provider), run as written on onnxruntime, then on ge with only the imports
changed. Prints the share of what passes on onnxruntime that passes on ge, and every miss with its error.

    python tools/ort_heldout.py --src DIR [--testdata DIR] [--only NAME ...]

DIR holds onnxruntime's scripts as its repository has them (nothing of them is in this repository):
`DIR/examples/*.py` (docs/python/examples: plot_load_and_predict, plot_common_errors, plot_backend, ...) and
`DIR/tests/*.py` (onnxruntime/test/python: unittest files). A test file's `from helper import get_name` is
given here: names resolve in --testdata (onnxruntime/test/testdata; a test whose model is missing fails on
onnxruntime too and is not counted). `--make-testdata DIR` writes the models some tests need whose content
the tests themselves fix (the ZipMap models), for when onnxruntime's testdata folder is not at hand.

Units: an example script counts once (it passes when it exits 0), a test method once (unittest's verdict).
The import change is textual, line by line: `import onnxruntime as X` -> `import ge.ort as X`,
`import onnxruntime` -> `import ge.ort as onnxruntime`, `from onnxruntime[.sub] import ...` ->
`from ge.ort[.sub] import ...`, `import onnxruntime.sub as X` -> `import ge.ort.sub as X`. Each run is a
fresh process in a scratch folder (examples write files). Needs scikit-learn and skl2onnx for the examples
that train models (a dev venv: `/work/devvenv/bin/python tools/ort_heldout.py ...`).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 900
_SWAPS = [
    (re.compile(r"^(\s*)import onnxruntime(\.[\w.]+)? as (\w+)", re.M), r"\1import ge.ort\2 as \3"),
    (re.compile(r"^(\s*)import onnxruntime\s*$", re.M), r"\1import ge.ort as onnxruntime"),
    (re.compile(r"^(\s*)from onnxruntime(\.[\w.]+)? import", re.M), r"\1from ge.ort\2 import"),
]
_HELPER = "import os\n\ndef get_name(name):\n    return os.path.join({!r}, name)\n"
_RESULT = re.compile(r"^(test\w*) \(([\w.]+)\)(?:\n.*?)? \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$",
                     re.M)


def swap_imports(text: str) -> str:
    for rx, to in _SWAPS:
        text = rx.sub(to, text)
    return text


def _run(cmd, cwd, env) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(cmd, -9, e.stdout or "", f"timed out after {TIMEOUT} s")


def _last_error(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def run_example(path: Path, ge: bool, env) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / path.name
        text = path.read_text()
        script.write_text(swap_imports(text) if ge else text)
        r = _run([sys.executable, script.name], tmp, env)
        return r.returncode == 0, _last_error(r.stderr)


def _unit(where: str, test: str) -> str:
    """Class.test from unittest's "(module.Class.test)" (Python 3.11+) or "(module.Class)"."""
    parts = where.split(".")
    return f"{parts[-2] if parts[-1] == test else parts[-1]}.{test}"


def run_tests(path: Path, ge: bool, env, testdata: str) -> dict[str, tuple[bool, str]]:
    """{Class.test: (passed, reason)} of one unittest file."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "helper.py").write_text(_HELPER.format(testdata))
        text = path.read_text()
        (Path(tmp) / path.name).write_text(swap_imports(text) if ge else text)
        r = _run([sys.executable, "-m", "unittest", "-v", path.stem], tmp, env)
        out = {}
        for m in _RESULT.finditer(r.stderr):
            out[_unit(m.group(2), m.group(1))] = (m.group(3) == "ok", m.group(3))
        for block in r.stderr.split("=" * 70)[1:]:   # the reasons of failures and errors
            head = block.strip().splitlines()[0] if block.strip() else ""
            m = re.match(r"(?:FAIL|ERROR): (\w+) \(([\w.]+)\)", head)
            if m:
                out[_unit(m.group(2), m.group(1))] = (False, _last_error(block.split("-" * 70)[1]
                                                                        if "-" * 70 in block else block))
        if not out:
            out[path.stem] = (False, _last_error(r.stderr) or "no test ran")
        return out


def make_testdata(folder: str) -> None:
    """The models of onnxruntime_test_python_mlops.py's ZipMap tests, as the tests define them."""
    from onnx import TensorProto, helper, save
    os.makedirs(folder, exist_ok=True)
    for name, key, labels in (("zipmap_stringfloat.onnx", TensorProto.STRING, {"classlabels_strings": ["class1", "class2", "class3"]}),
                              ("zipmap_int64float.onnx", TensorProto.INT64, {"classlabels_int64s": [10, 20, 30]})):
        out = helper.make_value_info("Z", helper.make_sequence_type_proto(helper.make_map_type_proto(
            key, helper.make_tensor_type_proto(TensorProto.FLOAT, None))))
        graph = helper.make_graph([helper.make_node("ZipMap", ["X"], ["Z"], domain="ai.onnx.ml", **labels)], "zipmap",
                                  [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 3])], [out])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)])
        save(model, os.path.join(folder, name))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", help="folder with examples/*.py and tests/*.py from onnxruntime's repository")
    ap.add_argument("--testdata", default="", help="onnxruntime/test/testdata (models the tests load)")
    ap.add_argument("--make-testdata", default="", help="write the models fixed by the tests into this folder")
    ap.add_argument("--only", nargs="*", default=(), help="file stems to run")
    args = ap.parse_args()
    if args.make_testdata:
        make_testdata(args.make_testdata)
        if not args.src:
            return 0
    if not args.src:
        ap.error("--src is required")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    src = Path(args.src)
    rows = []   # (unit, on onnxruntime, on ge, reason on ge)
    for path in sorted(src.glob("examples/*.py")) + sorted(src.glob("tests/*.py")):
        if args.only and path.stem not in args.only:
            continue
        if path.parent.name == "examples":
            ort_ok, ort_why = run_example(path, False, env)
            ge_ok, ge_why = run_example(path, True, env) if ort_ok else (False, "")
            rows.append((f"examples/{path.name}", ort_ok, ge_ok, ge_why if ort_ok else ort_why))
        else:
            ort = run_tests(path, False, env, os.path.abspath(args.testdata))
            ge = run_tests(path, True, env, os.path.abspath(args.testdata)) if any(ok for ok, _ in ort.values()) else {}
            for name, (ok, why) in sorted(ort.items()):
                got, reason = ge.get(name, (False, "did not run on ge"))
                rows.append((f"{path.stem}::{name}", ok, got and ok, reason if ok else why))
        print(f"  {rows[-1][0]}: onnxruntime {'pass' if rows[-1][1] else 'fail'}, ge {'pass' if rows[-1][2] else '-'}",
              file=sys.stderr, flush=True)
    counted = [r for r in rows if r[1]]
    passed = [r for r in counted if r[2]]
    print(f"held-out units: {len(rows)}; pass on onnxruntime: {len(counted)}; of those pass on ge: {len(passed)} "
          f"({100.0 * len(passed) / max(len(counted), 1):.1f}%)")
    for unit, _, ok, why in counted:
        if not ok:
            print(f"  MISS {unit}: {why}")
    for unit, ort_ok, _, why in rows:
        if not ort_ok:
            print(f"  not counted (fails on onnxruntime here) {unit}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

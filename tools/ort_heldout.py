"""The held-out measurement of issue 45: onnxruntime's own Python API usage (its documented examples and
its Python API tests, CPU provider), run as written on onnxruntime, then on ge with only the imports
changed. Prints the share of what passes on onnxruntime that passes on ge, and every miss with its error.

    python tools/ort_heldout.py --src DIR [--testdata DIR] [--only NAME ...]

DIR holds onnxruntime's scripts as its repository has them (nothing of them is in this repository):
`DIR/examples/*.py` (docs/python/examples: plot_load_and_predict, plot_common_errors, plot_backend, ...) and
`DIR/tests/*.py` (onnxruntime/test/python: unittest files). A test file's `from helper import get_name` is
given here: names resolve in --testdata (onnxruntime/test/testdata; a test whose model is missing fails on
onnxruntime too and is not counted). `--make-testdata DIR` writes the models some tests need whose content
the tests themselves fix (mul_1, matmul_1/2, logicaland, identity_string, the sequence and ZipMap models...),
for when onnxruntime's testdata folder is not at hand.

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
    """Models onnxruntime's tests load whose content the tests themselves fix (names, types, shapes and the
    values they assert), built with onnx.helper: for when onnxruntime's testdata folder is not at hand."""
    import json
    import shutil

    import numpy as np
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper, save
    os.makedirs(folder, exist_ok=True)

    def model(name, nodes, ins, outs, inits=(), ml=None, opset=17, meta=None):
        imports = [h.make_opsetid("", opset)] + ([h.make_opsetid("ai.onnx.ml", ml)] if ml else [])
        m = h.make_model(h.make_graph(nodes, name.split(".")[0], ins, outs, list(inits)), opset_imports=imports)
        if meta:
            h.set_model_props(m, meta)
        save(m, os.path.join(folder, name))

    def seq_of(elem, key=None):
        t = h.make_tensor_type_proto(elem, None)
        return h.make_sequence_type_proto(h.make_map_type_proto(key, t) if key else t)

    for name, key, labels in (("zipmap_stringfloat.onnx", T.STRING, {"classlabels_strings": ["class1", "class2", "class3"]}),
                              ("zipmap_int64float.onnx", T.INT64, {"classlabels_int64s": [10, 20, 30]})):
        model(name, [h.make_node("ZipMap", ["X"], ["Z"], domain="ai.onnx.ml", **labels)],
              [h.make_tensor_value_info("X", T.FLOAT, [None, 3])], [h.make_value_info("Z", seq_of(T.FLOAT, key))], ml=1)
    shutil.copy(ROOT / "ge" / "ort" / "datasets" / "mul_1.onnx", os.path.join(folder, "mul_1.onnx"))
    w = numpy_helper.from_array(np.array([[1.0], [2.0]], np.float32), "W")
    for name, batch in (("matmul_1.onnx", 3), ("matmul_2.onnx", "None")):
        model(name, [h.make_node("MatMul", ["X", "W"], ["Y"])], [h.make_tensor_value_info("X", T.FLOAT, [batch, 2])],
              [h.make_tensor_value_info("Y", T.FLOAT, [batch, 1])], [w])
    model("logicaland.onnx", [h.make_node("And", ["input1:0", "input:0"], ["output:0"])],
          [h.make_tensor_value_info(n, T.BOOL, [2, 2]) for n in ("input1:0", "input:0")],
          [h.make_tensor_value_info("output:0", T.BOOL, [2, 2])])
    model("identity_string.onnx", [h.make_node("Identity", ["input:0"], ["output:0"])],
          [h.make_tensor_value_info("input:0", T.STRING, [2, 2])], [h.make_tensor_value_info("output:0", T.STRING, [2, 2])])
    model("sequence_length.onnx", [h.make_node("SequenceLength", ["X"], ["Y"])], [h.make_value_info("X", seq_of(T.FLOAT))],
          [h.make_tensor_value_info("Y", T.INT64, [])])
    model("sequence_construct.onnx", [h.make_node("SequenceConstruct", ["tensor1", "tensor2"], ["output_sequence"])],
          [h.make_tensor_value_info(n, T.INT64, [2, 3]) for n in ("tensor1", "tensor2")],
          [h.make_value_info("output_sequence", seq_of(T.INT64))])
    model("sequence_insert.onnx", [h.make_node("SequenceInsert", ["input_seq", "tensor"], ["output_sequence"])],
          [h.make_value_info("input_seq", seq_of(T.INT64)), h.make_tensor_value_info("tensor", T.INT64, [2, 3])],
          [h.make_value_info("output_sequence", seq_of(T.INT64))])
    opt = h.make_optional_type_proto(seq_of(T.FLOAT))
    model("identity_opt.onnx", [h.make_node("Identity", ["x"], ["y"])], [h.make_value_info("x", opt)],
          [h.make_value_info("y", opt)], opset=16)
    x = h.make_tensor_value_info("x", T.FLOAT, ["Dim1", "Dim2", 5])
    for d, den in zip(x.type.tensor_type.shape.dim, ("DATA_BATCH", "DATA_CHANNEL")):
        d.denotation = den
    model("abs_free_dimensions.onnx", [h.make_node("Abs", ["x"], ["y"])], [x],
          [h.make_tensor_value_info("y", T.FLOAT, ["Dim1", "Dim2", 5])])
    config = {"session_options": {"inter_op_num_threads": 5, "intra_op_num_threads": 2,
                                  "graph_optimization_level": 99, "enable_profiling": 1}}
    model("model_with_valid_ort_config_json.onnx", [h.make_node("Abs", ["x"], ["y"])],
          [h.make_tensor_value_info("x", T.FLOAT, [2])], [h.make_tensor_value_info("y", T.FLOAT, [2])],
          meta={"ort_config": json.dumps(config)})
    model("add_mul_add.onnx", [h.make_node("Add", ["a", "b"], ["t0"], name="add_0"),
                               h.make_node("Mul", ["t0", "b"], ["t1"], name="mul_0"),
                               h.make_node("Add", ["t1", "a"], ["c"], name="add_1")],
          [h.make_tensor_value_info(n, T.FLOAT, [3]) for n in ("a", "b")], [h.make_tensor_value_info("c", T.FLOAT, [3])])
    pads = h.make_tensor("Pads_not_on_disk", T.INT64, [4], [0, 0, 0, 0])
    pads.ClearField("int64_data")
    pads.data_location = T.EXTERNAL
    for k, v in (("location", "Pads_not_on_disk.bin"), ("offset", "0"), ("length", "32")):
        entry = pads.external_data.add()
        entry.key, entry.value = k, v
    model("model_with_external_initializer_come_from_user.onnx", [h.make_node("Pad", ["x", "Pads_not_on_disk"], ["y"])],
          [h.make_tensor_value_info("x", T.FLOAT, [1, 2])], [h.make_tensor_value_info("y", T.FLOAT, [2, 3])], [pads])


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

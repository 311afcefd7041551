"""README.md runs as written: every Python block and every `ge` command of its blocks, in a folder holding the
`model.onnx` its examples name, and its sample output of `ge run` has the lines `ge run` prints."""
import re
import shlex
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ge.cli import main

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, re.S)
SET_UP = ("pip install",)   # installing is what CI itself does first


def _commands() -> list[str]:
    out = []
    for lang, body in BLOCKS:
        if lang != "bash":
            continue
        for line in body.splitlines():
            cmd = line.split("#", 1)[0].strip()
            if cmd.startswith(SET_UP):
                continue
            if cmd.startswith("ge "):
                out.append(cmd)
    return out


def _model(path: Path) -> None:
    """The README's model.onnx: an input x of [N, 3, 224, 224], a conv, a ReLU and a global pool."""
    w = np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["y"])]
    graph = helper.make_graph(nodes, "readme", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                              ["N", 3, 224, 224])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


@pytest.fixture
def folder(tmp_path, monkeypatch):
    _model(tmp_path / "model.onnx")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_readme_has_blocks_to_run():
    assert sum(lang == "python" for lang, _ in BLOCKS) >= 2 and len(_commands()) >= 8


def test_python_blocks_run(folder, capsys):
    scope = {}
    for lang, body in BLOCKS:
        if lang == "python":
            exec(compile(body, "README.md", "exec"), scope)   # noqa: S102 - the README's own examples
    assert (folder / "model.gem").exists()


@pytest.mark.parametrize("cmd", _commands())
def test_cli_commands_run(folder, cmd, capsys):
    args = shlex.split(cmd)[1:]
    if args[0] in ("run", "bench", "profile", "report"):   # the README's commands, at the fewest repeats
        args += ["--rounds", "1"] if args[0] == "bench" else ["--repeat", "1"]
    assert main(args) == 0, capsys.readouterr().err[-2000:]


def test_sample_output_has_the_lines_ge_run_prints(capsys):
    sample = next(body for lang, body in BLOCKS if body.startswith("model "))
    assert main(["run", "--repeat", "1"]) == 0
    printed = capsys.readouterr().out
    lines = {p.split()[0]: p for p in printed.splitlines() if p.strip()}
    assert [line.split()[0] for line in sample.splitlines() if line.strip()] == list(lines)
    phases = re.compile(r"([a-z][a-z ]*?) \d")   # "import ge 1.29   passes 0.47 ..." -> the phase names
    time_line = next(line for line in sample.splitlines() if line.startswith("time")).split(None, 1)[1]
    # the sample is a cold run: it also says what Numba compiled, which a warm run leaves out
    printed_phases = set(phases.findall(lines["time"].split(None, 1)[1]))
    assert printed_phases <= set(phases.findall(time_line))
    assert {"passes", "planning", "load", "first run"} <= printed_phases

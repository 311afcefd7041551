"""plan.to_json() schema and the `ge plan` command."""
import json

import pytest

import ge
from ge.cli import main
from ge.zoo import light_model_path


@pytest.fixture(scope="module")
def plan():
    return ge.compile(light_model_path("squeezenet"))


def test_json_schema(plan):
    d = json.loads(plan.to_json())
    assert set(d) >= {"nodes", "events", "tensors", "segments", "memory"}
    nodes = {n["name"] for n in d["nodes"]}
    assert len(d["events"]) == len(plan.events) > 0   # squeezenet: 2 streams
    assert all(e["record_after"] in nodes and e["wait_before"] in nodes for e in d["events"])
    assert [n["step"] for n in d["nodes"]] == list(range(len(plan.nodes)))
    names = {t["name"] for t in d["tensors"]}
    for n in d["nodes"]:
        assert set(n) >= {"name", "op_type", "step", "stream", "engine", "inputs", "outputs"}
        assert all(x is None or x in names for x in n["inputs"] + n["outputs"])
    tensors = {t["name"]: t for t in d["tensors"]}
    for t in d["tensors"]:
        assert set(t) >= {"name", "bytes", "segment", "offset", "alias_of", "part_of"}
        assert t["segment"] in ("weights", "feature_map", "atomic", "io", "dynamic")
        if t["segment"] != "dynamic":
            assert t["offset"] + t["bytes"] <= d["segments"][t["segment"]]
            assert t["offset"] % 512 == 0 or t["part_of"]  # a slice of a no-task Concat's output
    for n in d["nodes"]:  # squeezenet's 8 Concats are laid out in place: the inputs back to back
        if n["no_task"]:
            out = tensors[n["outputs"][0]]
            offsets = [tensors[i]["offset"] - out["offset"] for i in n["inputs"]]
            assert offsets[0] == 0 and offsets[1] == tensors[n["inputs"][0]]["bytes"]
            assert all(tensors[i]["part_of"] == out["name"] for i in n["inputs"])
    assert sum(n["no_task"] for n in d["nodes"]) == 8
    m = d["memory"]
    assert set(m) >= {"feature_map_bytes", "no_reuse_bytes", "lower_bound_bytes", "assigner"}
    assert m["lower_bound_bytes"] <= m["feature_map_bytes"] <= m["no_reuse_bytes"]
    assert m["feature_map_bytes"] == d["segments"]["feature_map"]


def test_ge_plan_prints_the_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "plan.json"
    model = light_model_path("squeezenet")
    assert main(["plan", model, "--json", str(out), "--order", "memory_priority"]) == 0
    text = capsys.readouterr().out
    for word in ("no reuse", "lower bound", "planned", "assigner", "binary-block", "max-block"):
        assert word in text
    assert json.loads(out.read_text())["memory"]["topo_sorting_mode"] == "memory_priority"
    assert main(["plan", light_model_path("squeezenet"), "--no-reuse", "--orders"]) == 0
    text = capsys.readouterr().out
    assert "no-reuse" in text and all(m in text for m in ("bfs", "rdfs", "memory_priority"))


def test_ge_plan_plot_needs_matplotlib_or_writes_a_png(tmp_path, capsys):
    png = tmp_path / "plan.png"
    rc = main(["plan", light_model_path("squeezenet"), "--plot", str(png)])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert rc == 2 and "matplotlib" in capsys.readouterr().err
    else:
        assert rc == 0 and png.stat().st_size > 0

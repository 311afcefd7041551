"""ge.torch.explain: graph breaks (Dynamo's and ge's, with reasons and source lines), the ATen ops ge
converted, and each plan (runtime, streams, memory), with `ge report` pages on request."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", minversion="2.1")

import ge.torch  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = torch.tanh(self.fc(x)) * 0.5
        torch._dynamo.graph_break()            # a break in Dynamo
        return torch.special.erfinv(y) + x      # erfinv: a break in ge (no converter)


def test_explain_names_breaks_ops_and_plans(tmp_path):
    e = ge.torch.explain(Net().eval(), torch.randn(4, 8), report=tmp_path)
    where = {(b.where, b.op) for b in e.breaks}
    assert ("dynamo", "python") in where and ("ge", "aten.erfinv.default") in where
    ge_break = next(b for b in e.breaks if b.where == "ge")
    assert "no converter" in ge_break.reason and "test_explain.py" in ge_break.source
    assert e.dynamo_graphs == 2 and len(e.graphs) == 2   # before the Dynamo break; the add after erfinv
    first = e.graphs[0]
    assert first.aten_ops["aten.addmm.default"] == 1 and first.aten_ops["aten.tanh.default"] == 1
    assert first.runtime == "v1" and first.nodes >= 2 and first.streams >= 1
    assert e.aten_ops["aten.add.Tensor"] == 1
    text = str(e)
    assert "2 graph break(s)" in text and "plan torch_graph: runtime_v1" in text and "erfinv" in text
    pages = sorted(p.name for p in tmp_path.iterdir())
    assert len(pages) == 2 and "Memory map" in (tmp_path / pages[0]).read_text()

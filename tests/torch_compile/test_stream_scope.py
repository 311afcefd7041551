"""ge.torch.stream_scope (TorchAir's npu_stream_switch): the ops traced inside a scope run on a stream of their
own in ge's plan (the `_stream_label` ge's stream allocator honours), the results are eager's, and the labels
survive a retrace per shape. Small: Linear, Relu, Sigmoid, Add kernels the suite compiles anyway."""
from __future__ import annotations

import contextlib

import pytest

torch = pytest.importorskip("torch", minversion="2.9")

import ge.torch  # noqa: E402
from ge.errors import GEError  # noqa: E402
from torch_checks import close, compiled  # noqa: E402


class TwoBranches(torch.nn.Module):
    def __init__(self, scoped=True):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)
        self.scope = ge.torch.stream_scope if scoped else (lambda name: contextlib.nullcontext())

    def forward(self, x):
        y = torch.relu(self.a(x))
        with self.scope("side"):
            z = torch.sigmoid(self.b(x))
            with self.scope("inner"):   # nested: the innermost name wins
                w = torch.neg(z)
        return y + z + w


def _streams(g) -> dict:
    """{the FX node a plan node came from: its stream}."""
    return {n.name.split("/")[0]: n.stream for n in g.session.plan.nodes}


def test_a_scope_gets_its_own_stream(made):
    model = TwoBranches().eval()
    run = compiled(model, fullgraph=True)
    x = torch.randn(4, 16)
    with torch.no_grad():
        close(run(x), model(x))
    (g,) = made
    s = _streams(g)
    # sigmoid fused into the scoped Gemm (addmm_1), which keeps the label
    assert len({s["addmm"], s["addmm_1"], s["neg"]}) == 3 and s["add"] == s["addmm"], s
    assert g.session.plan.num_streams == 3 and g.session.plan.events


def test_without_a_scope_the_allocator_decides(made):
    """No labels: ge's own rules (here the two independent Gemms on two streams)."""
    model = TwoBranches(scoped=False).eval()
    with torch.no_grad():
        compiled(model, fullgraph=True)(torch.randn(4, 16))
    (g,) = made
    assert not any("_stream_label" in n.attrs for n in g.session.plan.nodes)
    assert g.session.plan.num_streams <= 2


def test_scopes_survive_a_retrace_per_shape(made):
    model = TwoBranches().eval()
    run = compiled(model, dynamic=True)
    with torch.no_grad():
        for n in (3, 5):
            x = torch.randn(n, 16)
            close(run(x), model(x))
    g = made[-1]
    s = _streams(g)
    assert len({s["addmm"], s["addmm_1"], s["neg"]}) == 3 and g.session.plan.num_streams == 3


def test_bad_scope_name():
    with pytest.raises(GEError, match="non-empty stream name"):
        ge.torch.stream_scope("")


def test_the_scope_is_part_of_the_cache_key(tmp_path, made):
    """The same graph with and without a scope: two entries, each plan with its own streams."""
    config = ge.torch.CompilerConfig(cache_dir=str(tmp_path))
    x = torch.randn(4, 16)
    with torch.no_grad():
        for scoped in (True, False):
            torch._dynamo.reset()
            model = TwoBranches(scoped).eval()
            close(compiled(model, config=config, fullgraph=True)(x), model(x))
    assert len([p for p in tmp_path.iterdir() if not p.name.startswith(".")]) == 2
    assert [g.cache_hit for g in made] == [False, False]

"""ge.torch.set_dim_gears (TorchAir's gears over dims) -> ge's dims gears: one compile serves every gear,
exact shapes only; a size outside the gears recompiles (input without gears) or is an InputError (input
carrying them), as TorchAir's guards make it. Small: one Linear, float32 kernels the suite compiles anyway."""
from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch", minversion="2.1")

import ge.torch  # noqa: E402
from ge.errors import GEError, InputError, UnsupportedOpError  # noqa: E402
from ge.torch.runtime import GearedGraph  # noqa: E402
from torch_checks import close, compiled, inner  # noqa: E402


class Net(torch.nn.Module):
    """A softmax over the geared dim: padding it would change the result, so only exact gears are right."""

    def __init__(self, erfinv=False):
        super().__init__()
        torch.manual_seed(0)
        self.fc, self.erfinv = torch.nn.Linear(8, 8), erfinv

    def forward(self, x):
        y = torch.softmax(torch.relu(self.fc(x)), dim=1) * 2
        return torch.special.erfinv(y * 0.4) if self.erfinv else y


def _x(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))


def test_one_compile_serves_every_gear(made):
    model = Net().eval()
    run = compiled(model, dynamic=True, fullgraph=True)
    x = _x(2, 4, 8)
    ge.torch.set_dim_gears(x, {1: [4, 8]})
    with torch.no_grad():
        for seq in (4, 8, 4):
            xs = x if seq == 4 else _x(2, seq, 8)   # later inputs need no gears: Dynamo's guards hold them
            close(run(xs), model(xs))
    (g,) = made   # one Dynamo compile, one ge graph
    assert isinstance(g, GearedGraph) and g.compiles == 1
    assert sorted(g.convs) == [(4,), (8,)]
    stats = g.session.stats()
    assert stats["gear_runs"] == {(4,): 2, (8,): 1}


def test_a_size_outside_the_gears_recompiles_or_is_refused(made):
    model = Net().eval()
    run = compiled(model, dynamic=True)
    x = _x(2, 4, 8)
    ge.torch.set_dim_gears(x, {1: [4, 8]})
    with torch.no_grad():
        run(x)
        y = _x(2, 6, 8)               # no gears on it: Dynamo's guards fail, the frame compiles again
        close(run(y), model(y))
        assert len(made) == 2 and not isinstance(made[1], GearedGraph)
        z = _x(2, 5, 8)
        ge.torch.set_dim_gears(z, {1: [4, 8]})   # gears that do not hold its own size: TorchAir's error
        with pytest.raises(Exception) as info:
            run(z)
    err = inner(info.value)
    assert isinstance(err, InputError) and "size 5 on dim 1" in str(err) and "[4, 8]" in str(err)


def test_product_of_two_geared_dims(made):
    model = Net().eval()
    config = ge.torch.CompilerConfig(dynamic_gears_merge_policy="product")
    run = compiled(model, config=config, dynamic=True, fullgraph=True)
    x = _x(2, 4, 8)
    ge.torch.set_dim_gears(x, {0: [2, 3], 1: [4, 8]})
    with torch.no_grad():
        for shape in ((2, 4, 8), (3, 8, 8), (2, 8, 8)):
            xs = x if shape == (2, 4, 8) else _x(*shape)
            close(run(xs), model(xs))
    (g,) = made
    assert sorted(g.convs) == [(2, 4), (2, 8), (3, 4), (3, 8)]


def test_gears_need_the_whole_graph(caplog, made):
    model = Net(erfinv=True).eval()   # erfinv: no converter
    x = _x(2, 4, 8)
    ge.torch.set_dim_gears(x, {1: [4, 8]})
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="ge.torch"):
        close(compiled(model, dynamic=True)(x), model(x))
    assert any("set_dim_gears: gears need the whole graph" in r.getMessage() and "erfinv" in r.getMessage()
               for r in caplog.records)
    torch._dynamo.reset()
    with torch.no_grad(), pytest.raises(Exception) as info:
        compiled(model, dynamic=True, fullgraph=True)(x)
    assert isinstance(inner(info.value), UnsupportedOpError) and "erfinv" in str(inner(info.value))


@pytest.mark.parametrize("gears, match", [
    ({3: [4, 8]}, "not a dim"), ({1: [4]}, "2 to 100"), ({1: [1, 4]}, ">= 2"), ({1: [4, 4]}, "repeats"),
    ({1: "48"}, "list or tuple of ints"), ({}, "non-empty")])
def test_bad_gears_are_refused(gears, match):
    with pytest.raises(GEError, match=match):
        ge.torch.set_dim_gears(torch.zeros(2, 4, 8), gears)


def test_gears_set_twice_must_agree_and_config_checks():
    x = torch.zeros(2, 4, 8)
    ge.torch.set_dim_gears(x, {1: [4, 8]})
    ge.torch.set_dim_gears(x, {1: (4, 8)})   # the same gears again: allowed
    with pytest.raises(GEError, match="already has gears"):
        ge.torch.set_dim_gears(x, {1: [4, 16]})
    with pytest.raises(GEError, match="dynamic_gears_merge_policy"):
        ge.torch.CompilerConfig(dynamic_gears_merge_policy="cartesian")
    with torch.no_grad(), pytest.raises(Exception) as info:   # zip pairs gears: lists of one length
        x2 = torch.zeros(2, 4, 8)
        ge.torch.set_dim_gears(x2, {0: [2, 3, 4], 1: [4, 8]})
        compiled(Net().eval(), dynamic=True)(x2)
    assert "zip" in str(inner(info.value))
    torch._dynamo.reset()
    with torch.no_grad(), pytest.raises(Exception) as info:   # TorchAir: max-autotune only
        compiled(Net().eval(), mode="reduce-overhead", dynamic=True)(x)
    assert "max-autotune" in str(inner(info.value))


def test_a_dim_tied_to_a_geared_one_follows_its_gears(made):
    """Only x carries gears; y's dim 1 is the same size (Dynamo ties them by the add): it follows."""
    def fn(x, y):
        return torch.relu(x + y) * 2
    x, y = _x(2, 4, 8), _x(2, 4, 8)
    ge.torch.set_dim_gears(x, {1: [4, 8]})
    run = compiled(fn, dynamic=True, fullgraph=True)
    close(run(x, y), fn(x, y))
    x8, y8 = _x(2, 8, 8), _x(1, 8, 8).expand(2, 8, 8).contiguous()
    close(run(x8, y8), fn(x8, y8))
    (g,) = made
    # a gear names the size of every dim that follows the gears: x's dim 1, then y's
    assert sorted(g.convs) == [(4, 4), (8, 8)] and g.session.stats()["gear_runs"] == {(4, 4): 1, (8, 8): 1}


class Seq(torch.nn.Module):
    """What a transformer does with a sequence length: a position table sliced to it, a mask from the ids,
    a softmax over it."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb, self.pos, self.fc = torch.nn.Embedding(50, 8), torch.nn.Embedding(32, 8), torch.nn.Linear(8, 8)

    def forward(self, ids):
        h = self.emb(ids) + self.pos(torch.arange(ids.shape[1]))[None]
        scores = self.fc(h) @ h.transpose(1, 2) + (ids == 0)[:, None, :] * -1e4
        return torch.softmax(scores, dim=-1) @ h


def test_dynamo_compiles_once_for_every_gear(made):
    """Issue 49's target, <= 1 recompilation per gear, counted as Dynamo's compile ids (frame, compile):
    one for all the gears, one more for a size outside them (which then reuses its graph). Dynamo may
    restart a compile (dynamic=True makes Embedding's float norm_type a tensor, then specializes it: an
    attempt, not a compile); ge compiles once per Dynamo compile."""
    model, compiles = Seq().eval(), []
    inner_backend = ge.torch.get_backend(ge.torch.CompilerConfig())

    def counting(gm, example_inputs):
        cid = torch._guards.CompileContext.current_compile_id()
        compiles.append((cid.frame_id, cid.frame_compile_id))
        return inner_backend(gm, example_inputs)

    run = torch.compile(model, backend=counting, dynamic=True, fullgraph=True)
    ids = {n: torch.randint(1, 50, (1, n), generator=torch.Generator().manual_seed(n)) for n in (4, 8, 16, 6)}
    ge.torch.set_dim_gears(ids[4], {1: [4, 8, 16]})
    with torch.no_grad():
        for n in (4, 8, 16, 8, 4):
            close(run(ids[n]), model(ids[n]))
        assert len(set(compiles)) == 1 and [g.compiles for g in made if g.convs] == [1]
        for _ in range(2):
            close(run(ids[6]), model(ids[6]))
    assert len(set(compiles)) == 2

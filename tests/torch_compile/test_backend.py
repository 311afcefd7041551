"""torch.compile(backend="ge"): outputs against PyTorch eager, graph breaks, fullgraph errors, frozen weights.

Skipped without torch (CI installs it with the [torch] extra; fixtures in conftest.py). Models are small
(kernel compiles count)."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", minversion="2.1")

import ge.torch  # noqa: E402
from ge.errors import GEError, UnsupportedOpError  # noqa: E402
import torch_nets  # noqa: E402
from torch_checks import close, compiled  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


_close = close


def _compile(model, mode="max-autotune", **kw):
    return compiled(model, mode, **kw)


def test_small_cnn_matches_eager():
    torch.manual_seed(0)
    model = torch_nets.ResNet18(width=8, classes=10).eval()
    x = torch.randn(2, 3, 32, 32)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    compiled = _compile(model, fullgraph=True)
    with torch.no_grad():
        ref = model(x)
        y1, y2 = compiled(x), compiled(x)
    _close(y1, ref)
    for k, v in model.state_dict().items():   # read in place, never written (folds and packs make copies)
        assert torch.equal(v, before[k]), k
    assert y1.data_ptr() != y2.data_ptr()   # each run's result is its own tensor (bound outputs, v1)
    _close(y1, y2, 0.0)


def test_transformer_block_reduce_overhead_replays(made):
    pytest.importorskip("transformers")
    model = torch_nets.bert(layers=1, hidden=32, heads=2, vocab=64)
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(1, 8, dtype=torch.int64)
    mask[0, 6:] = 0   # padding: the additive mask's arithmetic (int -> float promotion) is exercised
    compiled = _compile(model, mode="reduce-overhead", fullgraph=True)
    with torch.no_grad():
        ref = model(ids, attention_mask=mask).last_hidden_state
        outs = [compiled(ids, attention_mask=mask).last_hidden_state for _ in range(3)]
    for y in outs:
        _close(y, ref)
    (g,) = made
    assert g.session.runtime == "v2" and g.session.stats()["last_run"] == "replayed"


def _erfinv_model():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x):
            y = torch.tanh(self.fc(x)) * 0.5
            return torch.special.erfinv(y) + x   # erfinv: no converter

    torch.manual_seed(0)
    return M().eval()


def test_unsupported_op_is_a_graph_break_with_its_reason(caplog, made):
    model, x = _erfinv_model(), torch.randn(4, 8)
    compiled = _compile(model)
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="ge.torch"):
        y = compiled(x)
        ref = model(x)
    _close(y, ref)
    breaks = [r.getMessage() for r in caplog.records if "graph break" in r.getMessage()]
    assert len(breaks) == 1 and "aten.erfinv.default" in breaks[0] and "no converter" in breaks[0]
    assert "test_backend.py" in breaks[0] and "erfinv(y)" in breaks[0]   # the model's source line
    assert len(made) == 2 and all(g.session is not None for g in made)   # ge runs what is before and after the break


def test_unsupported_op_under_fullgraph_is_a_typed_error():
    model, x = _erfinv_model(), torch.randn(4, 8)
    compiled = _compile(model, fullgraph=True)
    with torch.no_grad(), pytest.raises(Exception) as info:
        compiled(x)
    err = info.value if isinstance(info.value, UnsupportedOpError) else getattr(info.value, "inner_exception", None)
    assert isinstance(err, UnsupportedOpError), repr(info.value)
    assert err.op_type == "erfinv.default" and err.domain == "aten"
    assert "test_backend.py" in str(err) and "erfinv(y)" in str(err)


def test_changed_frozen_weight_compiles_again(made):
    model, x = _erfinv_model(), torch.randn(4, 8)
    model.forward = lambda x: torch.relu(model.fc(x))   # every op converts: one graph, weights frozen
    compiled = _compile(model, fullgraph=True)
    with torch.no_grad():
        _close(compiled(x), model(x))
        model.fc.weight.mul_(2)   # in place: same storage, version bumped
        _close(compiled(x), model(x))
    (g,) = made
    assert g.frozen and g.compiles == 2


def test_type_promotion_and_comparisons():
    def fn(x, idx):
        mask = (x > 0.25) & (idx.unsqueeze(1) != 2)
        return torch.where(mask, x * 2, idx.unsqueeze(1) + 1), (idx * 3 - 5) // 2, x.mean(dim=1, keepdim=True)
    x, idx = torch.randn(4, 5), torch.arange(4)
    ref = fn(x, idx)
    got = _compile(fn, fullgraph=True)(x, idx)
    for y, r in zip(got, ref):
        _close(y, r, 0.0 if r.dtype == torch.int64 else 1e-6)


def test_any_all_and_full_like():
    """What transformers' sdpa masks use (aten.any.dim, full_like), with torch's truth (nonzero, NaN too)."""
    def fn(x):
        return x.any(dim=1), (x > 0).all(dim=0, keepdim=True), torch.full_like(x, 2.5) * x
    x = torch.tensor([[0.0, 0.0, 0.0], [0.0, -1.0, float("nan")], [3.0, 0.5, 2.0]])
    for y, r in zip(_compile(fn, fullgraph=True)(x), fn(x)):
        np.testing.assert_array_equal(y.numpy(), r.numpy())


def test_training_graphs_are_left_to_pytorch(caplog, made):
    model, x = _erfinv_model(), torch.randn(4, 8)
    with caplog.at_level(logging.WARNING, logger="ge.torch"):
        y = _compile(model)(x)
    assert y.requires_grad and any("requires grad" in r.getMessage() for r in caplog.records)
    assert not made


def test_aicore_num_reaches_the_plan(made):
    config = ge.torch.CompilerConfig(aicore_num=1, options={"topo_sorting_mode": "bfs"})
    x = torch.randn(3, 4)
    _close(torch.compile(lambda t: torch.relu(t) * 2, backend=ge.torch.get_backend(config))(x), torch.relu(x) * 2)
    (g,) = made
    assert g.session.plan.options.aicore_num == 1 and g.session.plan.options.topo_sorting_mode == "bfs"


def test_config_refuses_unknown_mode():
    with pytest.raises(GEError, match="mode"):
        ge.torch.CompilerConfig(mode="fastest")


def test_registered_as_ge_by_entry_point():
    """pyproject's entry point names ge.torch's backend; torch's lookup by name loads and uses it."""
    from importlib.metadata import EntryPoint
    from torch._dynamo.backends import registry
    text = (ROOT / "pyproject.toml").read_text()
    assert '[project.entry-points.torch_dynamo_backends]\nge = "ge.torch.backend:backend"' in text
    ep = EntryPoint(name="ge", value="ge.torch.backend:backend", group="torch_dynamo_backends")
    saved = dict(registry._BACKENDS), dict(registry._COMPILER_FNS)
    registry._BACKENDS["ge"] = ep
    registry._COMPILER_FNS.pop("ge", None)
    try:
        assert registry.lookup_backend("ge") is ge.torch.backend
        x = torch.randn(3, 4)
        _close(torch.compile(lambda t: torch.relu(t) + 1, backend="ge")(x), torch.relu(x) + 1, 0.0)
    finally:
        registry._BACKENDS.clear(), registry._BACKENDS.update(saved[0])
        registry._COMPILER_FNS.clear(), registry._COMPILER_FNS.update(saved[1])


def test_new_input_shapes_compile_static_graphs(caplog, made):
    """Dynamo makes the sequence dim symbolic at its second size: ge compiles a static graph per size."""
    pytest.importorskip("transformers")
    model = torch_nets.bert(layers=1, hidden=32, heads=2, vocab=64)
    compiled = _compile(model, fullgraph=True)
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="ge.torch"):
        for seq in (5, 7, 9, 7):
            ids = torch.randint(0, 64, (1, seq), generator=gen)
            _close(compiled(ids).last_hidden_state, model(ids).last_hidden_state)
    assert len(made) == 3 and not caplog.records   # sizes 5, 7, 9; the second 7 reuses its graph


def test_as_strided_only_as_a_reshape(caplog):
    """Swin's pooler restrides a dense [1, 32, 1, 1]: a Reshape; a restriding that skips or overlaps elements
    is a graph break (and still right)."""
    def dense(x):
        return torch.as_strided(x.mean(dim=2, keepdim=True), (1, 4, 1), (4, 1, 4)) + 1

    def overlapping(x):
        return torch.as_strided(x * 2, (2, 3), (1, 1)) + 1
    x = torch.randn(1, 4, 3)
    with caplog.at_level(logging.WARNING, logger="ge.torch"):
        _close(_compile(dense)(x), dense(x), 1e-6)
        assert not caplog.records
        _close(_compile(overlapping)(x), overlapping(x), 1e-6)
    assert any("as_strided" in r.getMessage() and "not a reshape" in r.getMessage() for r in caplog.records)


def test_prims_convert_element_type_is_a_cast(caplog):
    """What a retrace over symbolic sizes leaves of a dtype conversion (BERT's masks under set_dim_gears)."""
    def fn(ids, x):
        return torch.ops.prims.convert_element_type(ids, torch.float32) * x
    ids, x = torch.arange(8).reshape(2, 4), torch.randn(2, 4)
    with caplog.at_level(logging.WARNING, logger="ge.torch"):
        _close(_compile(fn, fullgraph=True)(ids, x), fn(ids, x), 1e-6)
    assert not caplog.records

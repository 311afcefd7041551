"""The compile cache across processes (CompilerConfig(cache_dir=...)): a second compile of the same graph,
inputs, weights and config loads the plan instead of converting and compiling; a damaged or foreign entry
is refused with one warning and rebuilt. (Here the second "process" is a fresh Dynamo in this one: the
entry is all it shares; bench/torch_compile.py --cache measures a real second process.)"""
from __future__ import annotations

import json
import logging
import shutil

import pytest

torch = pytest.importorskip("torch", minversion="2.1")

import ge.torch  # noqa: E402
from ge.cli import main  # noqa: E402
from torch_checks import close, compiled  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2, x


def _run(model, cache, x, made, **kw):
    torch._dynamo.reset()
    made.clear()
    config = ge.torch.CompilerConfig(cache_dir=cache)
    run = compiled(model, config=config, fullgraph=True, **kw)
    with torch.no_grad():
        out = run(x)
        close(out[0], model(x)[0])
    assert out[1] is x
    (g,) = made
    g.run = run
    return g


def _entries(cache):
    return sorted(p for p in cache.iterdir() if p.is_dir() and not p.name.startswith("."))


def test_second_compile_loads_the_entry(tmp_path, made):
    model, x = Net().eval(), torch.randn(4, 8)
    assert not _run(model, tmp_path, x, made).cache_hit
    (entry,) = _entries(tmp_path)
    assert {p.name for p in entry.iterdir()} == {"plan.gem", "meta.json"}
    assert _run(model, tmp_path, x, made).cache_hit
    assert main(["report", str(entry / "plan.gem"), "-o", str(tmp_path / "entry.html")]) == 0   # ge report reads it
    assert "ge report" in (tmp_path / "entry.html").read_text()
    with torch.no_grad():
        model.fc.weight.mul_(2)   # other weights: another key, never the old plan
    assert not _run(model, tmp_path, x, made).cache_hit
    assert len(_entries(tmp_path)) == 2


@pytest.mark.parametrize("damage", ["flip a weight byte", "truncate plan.gem", "meta.json not JSON",
                                    "a foreign entry", "meta.json too large", "meta.json edited"])
def test_damaged_or_foreign_entry_is_refused_and_rebuilt(tmp_path, made, caplog, damage):
    model, x = Net().eval(), torch.randn(4, 8)
    _run(model, tmp_path, x, made)
    (entry,) = _entries(tmp_path)
    gem, meta = entry / "plan.gem", entry / "meta.json"
    if damage == "flip a weight byte":
        data = bytearray(gem.read_bytes())
        data[len(data) // 2] ^= 0xFF
        gem.write_bytes(bytes(data))
    elif damage == "truncate plan.gem":
        gem.write_bytes(gem.read_bytes()[:100])
    elif damage == "meta.json not JSON":
        meta.write_text("{ not json")
    elif damage == "a foreign entry":   # another graph's entry under this key
        _run(model, tmp_path / "other", torch.randn(3, 8), made)
        (other,) = _entries(tmp_path / "other")
        shutil.rmtree(entry)
        shutil.copytree(other, entry)
    elif damage == "meta.json too large":
        meta.write_text(json.dumps({"pad": "x" * (2 << 20)}))
    else:   # a field no other check reads: only the digest tells
        doc = json.loads(meta.read_text())
        doc["torch"] = "0.0"
        meta.write_text(json.dumps(doc))
    with caplog.at_level(logging.WARNING, logger="ge.torch"):
        assert not _run(model, tmp_path, x, made).cache_hit   # refused, compiled again: still right
    warned = [r.getMessage() for r in caplog.records if "compile cache entry" in r.getMessage()]
    assert len(warned) == 1 and "refused" in warned[0]
    assert _run(model, tmp_path, x, made).cache_hit            # the rebuilt entry serves the next compile


def test_gears_are_cached_too(tmp_path, made):
    model = Net().eval()
    x = torch.randn(2, 4, 8)
    ge.torch.set_dim_gears(x, {1: [4, 8]})
    first = _run(model, tmp_path, x, made, dynamic=True)
    again = _run(model, tmp_path, x, made, dynamic=True)
    assert not first.cache_hit and again.cache_hit and sorted(again.convs) == [(4,), (8,)]
    with torch.no_grad():
        y = torch.randn(2, 8, 8)
        close(again.run(y)[0], model(y)[0])
    assert again.session.stats()["gear_runs"][(8,)] == 1

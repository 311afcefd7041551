"""Fixtures of the torch.compile backend's tests: Dynamo reset around each test, and `made`, the GeGraphs
(GearedGraphs too) the backend makes. Skipped without torch (CI installs it with the [torch] extra)."""
from __future__ import annotations

import importlib

import pytest

torch = pytest.importorskip("torch", minversion="2.1")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def made(monkeypatch) -> list:
    """The GeGraphs the backend makes (each a graph, partition or gears ge runs), in order."""
    backend = importlib.import_module("ge.torch.backend")
    out = []
    for name in ("GeGraph", "GearedGraph"):
        cls = getattr(backend, name)
        recorded = type(name, (cls,), {"__init__": _recording(cls, out)})
        monkeypatch.setattr(backend, name, recorded)
    return out


def _recording(cls, out):
    def __init__(self, *args, **kwargs):
        cls.__init__(self, *args, **kwargs)
        out.append(self)
    return __init__

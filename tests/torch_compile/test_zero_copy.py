"""Tensors in and out without copies: contiguous CPU tensors are fed as numpy views of their memory (what
DLPack would hand over), runtime_v1 binds them as its input slots and computes the outputs straight into the
tensors torch allocated, when GE's 32-byte rule allows; runtime_v2's results become tensors sharing them."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", minversion="2.1")

from torch_checks import close, compiled  # noqa: E402


def fn(x, y):
    return torch.relu(x) * 2, x + y


def _zero_copy_counts(g):
    s = g.session.stats()
    return {k: s[k] for k in ("zero_copy_inputs", "copied_inputs", "misaligned_inputs", "zero_copy_outputs",
                              "fresh_outputs", "copied_outputs")}


def test_v1_binds_inputs_and_outputs_in_place(made):
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    run = compiled(fn, fullgraph=True)
    for got, want in zip(run(x, y), fn(x, y)):
        close(got, want, 1e-6)
    (g,) = made
    assert _zero_copy_counts(g) == {"zero_copy_inputs": 2, "copied_inputs": 0, "misaligned_inputs": 0,
                                    "zero_copy_outputs": 2, "fresh_outputs": 0, "copied_outputs": 0}


def test_v1_copies_what_alignment_does_not_allow(made):
    base = torch.randn(5 * 8 + 1)
    x = base[1:].view(5, 8)   # contiguous, 4 bytes past an aligned address: copied into the slot
    y = torch.randn(5, 8)
    run = compiled(fn, fullgraph=True)
    for got, want in zip(run(x, y), fn(x, y)):
        close(got, want, 1e-6)
    (g,) = made
    counts = _zero_copy_counts(g)
    assert counts["misaligned_inputs"] == 1 and counts["copied_inputs"] == 1 and counts["zero_copy_inputs"] == 1


def test_v2_outputs_share_ge_results(made, monkeypatch):
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    run = compiled(fn, mode="reduce-overhead", fullgraph=True)
    run(x, y)
    (g,) = made
    seen = []
    original = g.session.run
    monkeypatch.setattr(g.session, "run", lambda *a, **k: seen.append(original(*a, **k)) or seen[-1])
    outs = run(x, y)
    for got, want in zip(outs, fn(x, y)):
        close(got, want, 1e-6)
    assert all(np.shares_memory(t.numpy(), a) for t, a in zip(outs, seen[0]))

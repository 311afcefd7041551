"""Checks shared by the torch.compile backend's tests."""
from __future__ import annotations

import numpy as np
import torch

import ge.torch


def close(y, ref, tol=1e-4):
    """Within tol of eager, relative to the output's scale."""
    y, ref = np.asarray(y), np.asarray(ref)
    assert y.shape == ref.shape and y.dtype == ref.dtype
    err = np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-6)
    assert err <= tol, f"max error {err:.3g} of the output's scale"


def compiled(model, mode="max-autotune", config=None, **kw):
    config = config or ge.torch.CompilerConfig(mode=mode)
    return torch.compile(model, backend=ge.torch.get_backend(config), **kw)


def inner(exc):
    """The ge error Dynamo wrapped in its BackendCompilerFailed (or the error itself)."""
    return getattr(exc, "inner_exception", None) or exc

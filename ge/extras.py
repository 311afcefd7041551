"""Optional extras: which feature needs which package, and the one line that installs it.

`pip install -e .` brings what compiling and running need; the rest is an extra of ge-runtime (pyproject):
  plot   matplotlib        `ge plan --plot`, `ge bench --plot`
  bench  onnxruntime       `ge bench --vs onnxruntime`, bench/
  dist   mpi4py, mpich     HCCL across processes: `mpiexec -n 2 ge run MODEL --data-parallel 2` (ge/hccl/mpi.py)
  all    every extra above
A feature checks its extra before any work (`require`), so a missing one costs no compile.
"""
from __future__ import annotations

import importlib.util

from .errors import GEError

EXTRAS = {"plot": "matplotlib", "bench": "onnxruntime", "dist": "mpi4py"}


class MissingExtraError(GEError):
    """An optional package is not installed; the message names the pip command that installs it."""


def install_hint(extra: str) -> str:
    return f'pip install "ge-runtime[{extra}]"'


def have(extra: str) -> bool:
    return importlib.util.find_spec(EXTRAS[extra]) is not None


def require(extra: str, feature: str) -> None:
    """Raise MissingExtraError naming the install line when `extra`'s package is missing."""
    if not have(extra):
        raise MissingExtraError(f"{feature} needs {EXTRAS[extra]}, which is not installed: "
                                f"{install_hint(extra)} (or pip install {EXTRAS[extra]})")

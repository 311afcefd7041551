"""Offline models: save a compiled Plan and its weights, load it without recompiling.

A saved plan is two members, in a zip file (`model.gem`, stored uncompressed) or in a directory:
`plan.json` (format.py: the document) and `weights.npz` (the arrays, read without pickle); files.py reads
and writes them. A file is untrusted input: read.py checks every field as it builds the Plan, verify.py the
plan as a whole, before any runtime sees it. `ge.save` / `ge.load` / `ge compile -o` are the public verbs.
"""
from __future__ import annotations

import os

from ..errors import GEError, ModelLoadError
from ..plan import GearPlans, Plan
from ..plan_rules import check_plan_options
from .bounded import PLAN_CAP
from .files import is_offline_model, read_plan, read_weights, write_members
from .format import gears_document, plan_document, seal
from .read import build, parse, weights_check
from .verify import verify_plan

__all__ = ["is_offline_model", "load", "save", "save_gears"]


def save(plan: Plan, path: str | os.PathLike) -> str:
    """Write `plan` to `path`: a zip file (e.g. model.gem), or a directory if `path` is one (or ends in /).
    Returns the path written."""
    return _write(*plan_document(plan), path)


def save_gears(gp: GearPlans, path: str | os.PathLike) -> str:
    """Write gears (ge.compiler.compile_gears: batch or dims gears, with their fallback plan if any) to
    `path`, as `save` does a plan."""
    return _write(*gears_document(gp), path)


def _write(doc: dict, arrays: dict, path) -> str:
    return write_members(seal(doc), arrays, path)


def load(path: str | os.PathLike) -> Plan | GearPlans:
    """A Plan (or the GearPlans of `save_gears`) from a file or directory written by `save`; raises
    ModelLoadError if it cannot be used."""
    path = os.fspath(path)
    doc = parse(read_plan(path, PLAN_CAP), path)   # plan.json first: it says what weights.npz may hold
    arrays = read_weights(path, weights_check(doc, f"offline model '{path}': weights.npz"))
    try:
        built = build(doc, arrays)
        for plan in ([*built.plans.values(), *([built.fallback] if built.fallback else [])]
                     if isinstance(built, GearPlans) else [built]):
            verify_plan(plan)
            check_plan_options(plan, gear=isinstance(built, GearPlans))   # compile's rules, its messages
        return built
    except ModelLoadError as e:
        raise ModelLoadError(f"offline model '{path}': {e}") from e
    except GEError as e:
        raise ModelLoadError(f"offline model '{path}' cannot be loaded: {e}") from e
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise ModelLoadError(f"offline model '{path}' is corrupted: {type(e).__name__}: {e}") from e

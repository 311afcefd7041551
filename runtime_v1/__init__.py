"""runtime_v1: GE's task sink for static plans. Loading preloads per-stream task tables run by one native
interpreter loop (thunks for every kernel signature, a threaded fallback for the rest; tiled tasks on the
device's AI cores; host tasks for the string and ONNX-ML ops: host.py); `run(feeds)` only binds I/O (zero copy
where possible) and executes. Dynamic plans belong to runtime_v2."""
from ge.plan import GearPlans, Plan

from .executor import Executor
from .gears import GearedExecutor
from .model import Model


def load(model: Plan | GearPlans, device=None) -> Executor | GearedExecutor:
    """The executor of a static plan, or of batch gears (one plan per gear, memory shared)."""
    return GearedExecutor(model, device) if isinstance(model, GearPlans) else Executor(model, device)


__all__ = ["Executor", "GearedExecutor", "Model", "load"]

"""runtime_v1: GE's task sink for static plans. `load(plan)` preloads per-stream task tables run by one
native interpreter loop (thunks for every kernel signature, a threaded fallback for the rest); `run(feeds)`
only binds I/O (zero copy where possible) and executes. Dynamic plans belong to runtime_v2."""
from .executor import Executor
from .model import Model, load
from .thunks import cache_dir

__all__ = ["Executor", "Model", "cache_dir", "load"]

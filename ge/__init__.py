"""ge: a graph compiler and two runtimes for a modelled NPU, after Huawei's GE.

    import ge
    sess = ge.Session("model.onnx", runtime="v2")
    y, = sess.run(None, {"x": x})
"""
import time as _time

_IMPORT_T0 = _time.perf_counter()   # `ge run` reports how long importing ge (numba, onnx, numpy) took
from . import host_heap  # noqa: E402,F401 (before any large array: ge/host_heap.py)
from . import errors  # noqa: E402
from .api import NodeArg, Session, available_runtimes
from .kv_state import KVCache
from .generation import Generation, generate
from .compiler import compile
from .errors import (DeviceMemoryError, ExecutionError, GEError, InputError, ModelLoadError, ShapeError,
                     UnsupportedOpError, UsageError)
from .offline import load, save
from .options import Options
from .overflow import overflow_nodes
from .ort import ExecutionMode, GraphOptimizationLevel, InferenceSession, SessionOptions
from .plan import Plan

__all__ = ["Session", "KVCache", "generate", "Generation",
           "NodeArg", "Options", "Plan", "compile", "save", "load", "available_runtimes", "errors",
           "InferenceSession", "SessionOptions", "GraphOptimizationLevel", "ExecutionMode", "GEError",
           "ModelLoadError", "UnsupportedOpError", "ShapeError", "InputError", "DeviceMemoryError",
           "ExecutionError", "UsageError", "overflow_nodes"]
__version__ = "0.1.0"
IMPORT_SECONDS = _time.perf_counter() - _IMPORT_T0

"""onnxruntime's module-level functions: the providers, the version and build, logging, seeds, threads."""
from __future__ import annotations

import numbers
import sys

import numpy as np

from ..errors import UsageError
from .options import GLOBAL_THREADS, _threads
from .providers import ALL_PROVIDERS, CPU

API_VERSION = "1.32.0"   # the onnxruntime Python API this module follows (onnxruntime's version string)


def get_available_providers() -> list[str]:
    return [CPU]


def get_all_providers() -> list[str]:
    return list(ALL_PROVIDERS)


def get_device() -> str:
    return "CPU"


def get_version_string() -> str:
    return API_VERSION


def get_build_info() -> str:
    ge_version = getattr(sys.modules.get("ge"), "__version__", "?")   # read, not imported: ge imports ge.ort
    return f"ge Build Info: ge {ge_version}, onnxruntime {API_VERSION} Python API, CPU provider over ge's runtimes"


def has_collective_ops() -> bool:
    """onnxruntime's collective ops (its NCCL contrib ops) are not in ge (ge's own are the Hcom ops)."""
    return False


def enable_telemetry_events() -> None:
    """ge collects no telemetry: nothing to enable."""


def disable_telemetry_events() -> None:
    """ge collects no telemetry: nothing to disable."""


def preload_dlls(cuda: bool = True, cudnn: bool = True, msvc: bool = True, directory=None) -> None:
    """onnxruntime loads its GPU libraries here; ge's CPU package has none to load."""


def print_debug_info() -> None:
    print(get_build_info())
    print(f"available providers: {get_available_providers()}")


def set_seed(seed: int) -> None:
    """The seed of what ge draws when a model gives none (Dropout in training mode without a `seed`
    attribute draws one from numpy's legacy generator at compile time: ge/kernels/tensor.py)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise UsageError(f"set_seed: {seed!r:.20} is not an int")
    np.random.seed(int(seed) % 2 ** 32)


def set_global_thread_pool_sizes(intra_op_num_threads: int = 0, inter_op_num_threads: int = 0) -> None:
    """The thread budget of sessions whose SessionOptions.intra_op_num_threads is 0 (ge's sessions share one
    device's AI cores; inter-op threads are ge's stream threads, sized from the same budget)."""
    GLOBAL_THREADS["intra_op_num_threads"] = _threads(intra_op_num_threads, "intra_op_num_threads")
    _threads(inter_op_num_threads, "inter_op_num_threads")

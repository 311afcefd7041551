"""ge's onnxruntime: the CPU Python API of onnxruntime over ge's compiler and runtimes.

A script written for onnxruntime runs on ge by changing its import: `import ge.ort as onnxruntime`, and
`from ge.ort import InferenceSession, OrtValue, ...` / `from ge.ort.capi.onnxruntime_pybind11_state import
InvalidArgument` where it imported from onnxruntime. docs/onnxruntime.md says what is the same, what differs
and what ge adds; each class's module says what it maps onto:
- `session.py`: InferenceSession (runs, providers, profiling); `iobinding.py`: IOBinding;
- `options.py`: SessionOptions, RunOptions and the enums; `model.py`: free dims and initializers applied;
- `ortvalue.py`: OrtValue, OrtValueVector; `profiling.py`: onnxruntime's profile format;
- `providers.py`: the CPU provider, the warning for others; `logging.py`: the default logger;
- `capi/`: onnxruntime's import paths (its exception classes, defined in ge/errors.py); `datasets/`.
"""
from __future__ import annotations

import enum

from ..errors import (EPFail, EngineError, Fail, InvalidArgument, InvalidGraph, InvalidProtobuf, ModelLoaded,
                      NoModel, NoSuchFile, NotFound, RuntimeException, UsageError)
from ..api import NodeArg
from .devices import (OrtArenaCfg, OrtDevice, OrtDeviceMemoryType, OrtDeviceVendorId, OrtMemoryInfo,
                      OrtMemoryInfoDeviceType, create_and_register_allocator, create_and_register_allocator_v2)
from .info import (API_VERSION, disable_telemetry_events, enable_telemetry_events, get_all_providers,
                   get_available_providers, get_build_info, get_device, get_version_string, has_collective_ops,
                   preload_dlls, print_debug_info, set_global_thread_pool_sizes, set_seed)
from .iobinding import IOBinding
from .logging import set_default_logger_callback, set_default_logger_severity, set_default_logger_verbosity
from .options import (ExecutionMode, ExecutionOrder, GraphOptimizationLevel, OrtAllocatorType, OrtMemType,
                      RunOptions, SessionOptions)
from .ortvalue import OrtValue, OrtValueVector, copy_tensors
from .session import InferenceSession, ModelMetadata

__version__ = version = API_VERSION
cuda_version = ""   # a CPU package: no CUDA
package_name = "ge"
SessionIOBinding = IOBinding


from .sparse import OrtSparseFormat, SparseTensor  # noqa: E402
from . import capi, datasets  # noqa: E402

__all__ = ["InferenceSession", "SessionOptions", "RunOptions", "IOBinding", "SessionIOBinding", "OrtValue",
           "OrtValueVector", "copy_tensors", "OrtSparseFormat", "cuda_version", "NodeArg", "ModelMetadata", "OrtMemoryInfo", "OrtDevice", "OrtDeviceVendorId",
           "OrtDeviceMemoryType", "OrtMemoryInfoDeviceType", "OrtArenaCfg", "create_and_register_allocator",
           "create_and_register_allocator_v2", "GraphOptimizationLevel", "ExecutionMode",
           "ExecutionOrder", "OrtAllocatorType", "OrtMemType", "SparseTensor", "get_available_providers",
           "get_all_providers", "get_device", "get_version_string", "get_build_info", "has_collective_ops",
           "set_default_logger_severity", "set_default_logger_verbosity", "set_default_logger_callback",
           "enable_telemetry_events", "disable_telemetry_events", "preload_dlls", "print_debug_info",
           "set_seed", "set_global_thread_pool_sizes", "capi", "datasets", "Fail", "InvalidArgument",
           "NoSuchFile", "NoModel", "EngineError", "RuntimeException", "InvalidProtobuf", "ModelLoaded",
           "InvalidGraph", "EPFail", "NotFound"]

"""SessionOptions and RunOptions with onnxruntime's fields, and what each means in ge.

SessionOptions fields that mean something in ge are mapped onto ge's Options (`to_options`):
- `intra_op_num_threads` -> the thread budget (AI cores and stream threads; 0: the CPUs ge may use);
- `graph_optimization_level` ORT_DISABLE_ALL -> every graph rewrite off (ge has no levels in between: BASIC,
  EXTENDED, LAYOUT and ALL run ge's whole pipeline);
- `enable_mem_reuse` False -> ge.exec.disableReuseMemory;
- `enable_profiling` / `profile_file_prefix` -> each run traced (ge/ort/profiling.py).
Free dimension overrides and initializers (`add_initializer`, `add_external_initializers`) rewrite the ONNX
model before ge imports it (ge/ort/model.py). The other fields are kept and read back, as onnxruntime's CPU
provider keeps settings it does not use (`inter_op_num_threads`, `execution_mode`, memory arenas, logging).
"""
from __future__ import annotations

import enum
import numbers

import numpy as np

from ..errors import InputError, UsageError
from ..options import Options
from ..passes import PIPELINE

GLOBAL_THREADS = {"intra_op_num_threads": 0}   # set_global_thread_pool_sizes
OPTIMIZATIONS = tuple(sorted({name for name, _ in PIPELINE} - {"infer_shapes"}))   # graph rewrites


class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class OrtAllocatorType(enum.IntEnum):
    INVALID = -1
    ORT_DEVICE_ALLOCATOR = 0
    ORT_ARENA_ALLOCATOR = 1


class OrtMemType(enum.IntEnum):
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1
    DEFAULT = 0


def _text(value, what: str) -> str:
    """onnxruntime's config entries are strings (its binding raises TypeError for anything else)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value


def _config(entries: dict, key, where: str) -> str:
    if key not in entries:   # onnxruntime's contract: RuntimeError, not KeyError
        raise UsageError(f"{where} does not have configuration with key: {key}")
    return entries[key]


class SessionOptions:
    """onnxruntime.SessionOptions: the same fields and methods, with their defaults."""

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = ExecutionOrder.DEFAULT
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"
        self.enable_mem_reuse = True
        self.enable_mem_pattern = True
        self.enable_cpu_mem_arena = True
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.optimized_model_filepath = ""
        self.use_deterministic_compute = False   # ge's results are bitwise the same run to run anyway
        self.use_per_session_threads = True
        self.config_entries: dict[str, str] = {}
        self.free_dimensions_by_name: dict[str, int] = {}
        self.free_dimensions_by_denotation: dict[str, int] = {}
        self.initializers: dict[str, np.ndarray] = {}

    # -- config entries ("session.*" keys) ----------------------------------------------------------
    def add_session_config_entry(self, key: str, value: str) -> None:
        self.config_entries[_text(key, "key")] = _text(value, "value")

    def get_session_config_entry(self, key: str) -> str:
        return _config(self.config_entries, key, "SessionOptions")

    # -- the model's inputs and initializers --------------------------------------------------------
    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Inputs' symbolic dim `dim_name` (an ONNX dim_param) becomes `dim_value` at load."""
        self.free_dimensions_by_name[_text(dim_name, "dim_name")] = _size(dim_value, dim_name)

    def add_free_dimension_override_by_denotation(self, dim_denotation: str, dim_value: int) -> None:
        """Inputs' dims denoted `dim_denotation` (e.g. DATA_BATCH) become `dim_value` at load."""
        self.free_dimensions_by_denotation[_text(dim_denotation, "dim_denotation")] = _size(dim_value,
                                                                                             dim_denotation)

    def add_initializer(self, name: str, ort_value) -> None:
        """The model's initializer `name` takes this value (an OrtValue or array) at load."""
        self.initializers[_text(name, "name")] = _array(ort_value, name)

    def add_external_initializers(self, names: list, ort_values: list) -> None:
        """Values for initializers the model keeps as external data (or any initializer), by name."""
        if len(names) != len(ort_values):
            raise InputError(f"add_external_initializers: {len(names)} names but {len(ort_values)} values")
        for name, value in zip(names, ort_values):
            self.add_initializer(name, value)

    def add_external_initializers_from_files_in_memory(self, names: list, buffers: list, lengths: list) -> None:
        """External data files given in memory: the model's external data `location` named in `names` is
        read from the matching buffer instead of the disk."""
        if not len(names) == len(buffers) == len(lengths):
            raise InputError("add_external_initializers_from_files_in_memory: names, buffers and lengths "
                             f"differ in length ({len(names)}, {len(buffers)}, {len(lengths)})")
        files = self.__dict__.setdefault("external_files", {})
        for name, buf, n in zip(names, buffers, lengths):
            files[_text(name, "file name")] = memoryview(buf).cast("B")[:int(n)].tobytes()

    # -- providers and custom ops -------------------------------------------------------------------
    def register_custom_ops_library(self, library_path: str) -> None:
        raise UsageError(f"register_custom_ops_library('{library_path}'): ge runs no onnxruntime custom-op "
                         "libraries (their kernels are compiled against onnxruntime's C API); register the op "
                         "as a ge kernel instead (ge/kernels/registry.py)")

    def add_provider(self, provider_name: str, provider_options: dict | None = None) -> None:
        from .providers import check_providers
        check_providers([provider_name])

    def has_providers(self) -> bool:
        return False

    # -- ge ------------------------------------------------------------------------------------------
    def to_options(self) -> Options:
        """ge's Options for these fields (module doc)."""
        threads = _threads(self.intra_op_num_threads, "SessionOptions.intra_op_num_threads") or \
            GLOBAL_THREADS["intra_op_num_threads"]
        level = int(self.graph_optimization_level)
        return Options(thread_budget=int(threads),
                       disabled_passes=OPTIMIZATIONS if level == GraphOptimizationLevel.ORT_DISABLE_ALL else (),
                       disable_reuse_memory=not self.enable_mem_reuse)


class RunOptions:
    """onnxruntime.RunOptions. `terminate` is read when a run starts (a run in progress finishes: ge's
    runtimes have no point between tasks to stop at); `only_execute_path_to_fetches` is ge's behaviour
    anyway for the outputs a plan holds."""

    def __init__(self):
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self.run_config_entries: dict[str, str] = {}

    def add_run_config_entry(self, key: str, value: str) -> None:
        self.run_config_entries[_text(key, "key")] = _text(value, "value")

    def get_run_config_entry(self, key: str) -> str:
        return _config(self.run_config_entries, key, "RunOptions")

    def add_active_adapter(self, adapter) -> None:
        raise UsageError("RunOptions.add_active_adapter: ge runs no LoRA adapters (onnxruntime's "
                         "LoraAdapter format)")


def _threads(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise InputError(f"{what} must be an int >= 0, got {value!r:.20}")
    return int(value)


def _size(value, what) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InputError(f"free dimension '{what}' must be a positive int, got {value!r}")
    return int(value)


def _array(value, name) -> np.ndarray:
    arr = value.numpy() if hasattr(value, "numpy") and not isinstance(value, np.ndarray) else value
    if not isinstance(arr, np.ndarray):
        raise InputError(f"initializer '{name}' must be an OrtValue or numpy array, not {type(value).__name__}")
    return arr

"""A drop-in for onnxruntime users: `ge.InferenceSession` and `ge.SessionOptions` with onnxruntime's names.

A script written for onnxruntime runs on ge by changing its import (`import ge as ort`, or
`from ge import InferenceSession, SessionOptions`):
- `InferenceSession(path_or_bytes, sess_options=None, providers=None, ...)`: `run(output_names, input_feed)`,
  `get_inputs()` / `get_outputs()` (name, shape, type), `get_modelmeta()`, `get_providers()`,
  `get_session_options()`, `io_binding()` + `run_with_iobinding()` (bound outputs are computed in place:
  ge's zero copy), `end_profiling()`.
- `SessionOptions` fields that mean something in ge are mapped: `intra_op_num_threads` -> the thread budget
  (AI cores and stream threads), `graph_optimization_level` (ORT_DISABLE_ALL turns every graph pass off),
  `enable_profiling` / `profile_file_prefix` (each run traced; `end_profiling()` writes a Chrome/Perfetto
  trace and returns its name), `enable_mem_reuse` (False: ge.exec.disableReuseMemory). The others are
  accepted and ignored, as onnxruntime's CPU provider ignores options of other providers.
ge runs on its modelled NPU; `providers` may name CPUExecutionProvider (or ge's own name, GEExecutionProvider);
others are ignored with the same warning onnxruntime gives for an unavailable provider.
"""
from __future__ import annotations

import enum
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .api import Session
from .errors import InputError
from .options import Options
from .passes import PIPELINE

PROVIDERS = ["GEExecutionProvider", "CPUExecutionProvider"]
OPTIMIZATIONS = tuple(sorted({name for name, _ in PIPELINE} - {"infer_shapes"}))   # graph rewrites


class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


@dataclass
class SessionOptions:
    intra_op_num_threads: int = 0
    inter_op_num_threads: int = 0
    graph_optimization_level: GraphOptimizationLevel = GraphOptimizationLevel.ORT_ENABLE_ALL
    execution_mode: ExecutionMode = ExecutionMode.ORT_SEQUENTIAL
    enable_profiling: bool = False
    profile_file_prefix: str = "onnxruntime_profile_"
    enable_mem_reuse: bool = True
    enable_mem_pattern: bool = True
    enable_cpu_mem_arena: bool = True
    log_severity_level: int = 2
    log_verbosity_level: int = 0
    logid: str = ""
    optimized_model_filepath: str = ""
    use_deterministic_compute: bool = False
    config_entries: dict = field(default_factory=dict)

    def add_session_config_entry(self, key: str, value: str) -> None:
        self.config_entries[key] = value

    def get_session_config_entry(self, key: str) -> str:
        return self.config_entries[key]

    def to_options(self) -> Options:
        """ge's Options for these fields (module doc)."""
        return Options(thread_budget=max(0, int(self.intra_op_num_threads)),
                       disabled_passes=OPTIMIZATIONS if self.graph_optimization_level == 0 else (),
                       disable_reuse_memory=not self.enable_mem_reuse)


@dataclass(frozen=True)
class ModelMetadata:
    producer_name: str = ""
    graph_name: str = ""
    domain: str = ""
    description: str = ""
    graph_description: str = ""
    version: int = 0
    custom_metadata_map: dict = field(default_factory=dict)


class IOBinding:
    """onnxruntime's IOBinding on the CPU: inputs by name, outputs computed into bound arrays (zero copy)."""

    def __init__(self, session: "InferenceSession"):
        self._session, self._inputs, self._outputs, self._bound, self._results = session, {}, [], {}, []

    def bind_cpu_input(self, name: str, arr: np.ndarray) -> None:
        self._inputs[name] = np.asarray(arr)

    def bind_input(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        raise InputError("ge binds inputs as numpy arrays: use bind_cpu_input(name, array)")

    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0, element_type=None,
                    shape=None, buffer_ptr=None) -> None:
        """Output `name` comes back from run_with_iobinding; to have it written into an array of yours, pass
        it with bind_output_array (onnxruntime's raw pointers have no numpy counterpart here)."""
        if buffer_ptr is not None:
            raise InputError("ge binds outputs as numpy arrays: use bind_output_array(name, array)")
        self._outputs.append(name)

    def bind_output_array(self, name: str, arr: np.ndarray) -> None:
        self._outputs.append(name)
        self._bound[name] = arr

    def clear_binding_inputs(self) -> None:
        self._inputs = {}

    def clear_binding_outputs(self) -> None:
        self._outputs, self._bound = [], {}

    def synchronize_inputs(self) -> None:
        pass

    def synchronize_outputs(self) -> None:
        pass

    def copy_outputs_to_cpu(self) -> list[np.ndarray]:
        return [np.array(r) for r in self._results]

    def get_outputs(self) -> list[np.ndarray]:
        return list(self._results)


class InferenceSession:
    def __init__(self, path_or_bytes, sess_options: SessionOptions | None = None, providers=None,
                 provider_options=None, **kwargs):
        for p in providers or ():
            name = p[0] if isinstance(p, tuple) else p
            if name not in PROVIDERS:
                warnings.warn(f"Specified provider '{name}' is not in available provider names. Available "
                              f"providers: '{', '.join(PROVIDERS)}'", stacklevel=2)
        self._sess_options = sess_options or SessionOptions()
        self._session = Session(path_or_bytes, options=self._sess_options.to_options())
        self._model = path_or_bytes
        self._trace, self._profile_start = None, time.time_ns()
        if self._sess_options.enable_profiling:
            from .npu import Tracer
            self._trace = Tracer("ge")

    # -- onnxruntime's surface ---------------------------------------------------------------------
    def run(self, output_names, input_feed: dict, run_options=None) -> list[np.ndarray]:
        if self._trace is None:
            return self._session.run(output_names, input_feed)
        out = self._session.run_traced(input_feed, self._trace)
        if output_names is None:
            return out
        names = [o.name for o in self._session.get_outputs()]
        return [out[names.index(n)] for n in output_names]

    def get_inputs(self):
        return self._session.get_inputs()

    def get_outputs(self):
        return self._session.get_outputs()

    def get_overridable_initializers(self) -> list:
        return []

    def get_providers(self) -> list[str]:
        return list(PROVIDERS)

    def get_provider_options(self) -> dict:
        return {p: {} for p in PROVIDERS}

    def get_session_options(self) -> SessionOptions:
        return self._sess_options

    def get_modelmeta(self) -> ModelMetadata:
        meta = _metadata(self._model)
        return meta if meta is not None else ModelMetadata(graph_name=self._session.plan.name)

    def get_profiling_start_time_ns(self) -> int:
        return self._profile_start

    def end_profiling(self) -> str:
        """Write the runs traced so far as a Chrome/Perfetto trace; its file name ("" when not profiling)."""
        if self._trace is None:
            return ""
        name = f"{self._sess_options.profile_file_prefix}{time.strftime('%Y-%m-%d_%H-%M-%S')}.json"
        self._trace.save(name)
        return name

    def io_binding(self) -> IOBinding:
        return IOBinding(self)

    def run_with_iobinding(self, iobinding: IOBinding, run_options=None) -> None:
        names = iobinding._outputs or [o.name for o in self.get_outputs()]
        bound = {n: a for n, a in iobinding._bound.items() if n in names}
        iobinding._results = self._session.run(names, iobinding._inputs, outputs=bound or None)


def _metadata(model) -> ModelMetadata | None:
    """The ONNX model's metadata, when `model` is an ONNX file, bytes or ModelProto."""
    try:
        from .frontends.onnx import load_model
        proto, _, _ = load_model(model)
    except Exception:  # noqa: BLE001 - an offline plan or a TensorFlow graph has no ONNX metadata
        return None
    return ModelMetadata(proto.producer_name, proto.graph.name, proto.domain, proto.doc_string,
                         proto.graph.doc_string, proto.model_version,
                         {p.key: p.value for p in proto.metadata_props})

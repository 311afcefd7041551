"""InferenceSession: onnxruntime's session class over a ge.Session.

A run goes straight to `ge.Session.run` (same feeds, same outputs; bound outputs computed in place), so the
drop-in costs nothing per run (bench/ort_dropin.py). What onnxruntime does around a run is done here:
feeds that are not arrays (Python lists, scalars, OrtValues) are converted to the input's declared type,
`output_names` empty means all outputs, RunOptions.terminate refuses the run, and a profiling session traces
each run (ge/ort/profiling.py).

ge adds, beyond onnxruntime's API: `runtime=` ("v1" | "v2" | "auto"), `ge_options=` (ge.Options or a dict,
merged over what SessionOptions maps), the `session` (ge.Session: `plan`, `stats()`, `stream_threads`) and
`close()`.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from ..api import NodeArg, Session
from ..errors import ExecutionError, Fail, InputError
from ..options import Options, as_options
from . import providers as prov
from .devices import OrtMemoryInfo
from .iobinding import IOBinding
from .logging import log
from .model import prepared
from .options import SessionOptions
from .ortvalue import OrtValue
from .profiling import Profiler, trace_name


@dataclass(frozen=True)
class ModelMetadata:
    producer_name: str = ""
    graph_name: str = ""
    domain: str = ""
    description: str = ""
    graph_description: str = ""
    version: int = 0
    custom_metadata_map: dict = field(default_factory=dict)


class InferenceSession:
    """onnxruntime.InferenceSession(path_or_bytes, sess_options=None, providers=None, provider_options=None)."""

    def __init__(self, path_or_bytes, sess_options: SessionOptions | None = None, providers=None,
                 provider_options=None, *, runtime: str = "auto", ge_options=None, **kwargs):
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise InputError(f"sess_options must be a SessionOptions, not {type(sess_options).__name__}")
        try:
            self._requested = prov.normalize(providers, provider_options)
        except InputError as e:   # onnxruntime reports a bad provider list and falls back to the CPU
            log(3, f"{e}; falling back to ['{prov.CPU}']")
            self._requested = {prov.CPU: {}}
        prov.check_providers(self._requested)
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        if os.environ.get("ORT_LOAD_CONFIG_FROM_MODEL") == "1":
            self._sess_options = _options_from_model(path_or_bytes, self._sess_options)
        so = self._sess_options
        self._model = path_or_bytes
        self._profiler = Profiler(so.profile_file_prefix) if so.enable_profiling else None
        self._trace_file = ""
        options = so.to_options()
        if ge_options is not None:   # ge's own options win over what SessionOptions maps
            given, default = as_options(ge_options), Options()
            options = options.replace(**{f.name: getattr(given, f.name) for f in dataclasses.fields(Options)
                                         if getattr(given, f.name) != getattr(default, f.name)})
        start = time.perf_counter()
        log(0, f"loading model {_describe(path_or_bytes)}", so.logid, "InferenceSession")
        model = prepared(path_or_bytes, so)
        loaded = time.perf_counter()
        self.session = Session(model, runtime=runtime, options=options)
        self._session_run = self.session.run
        if self._profiler is not None:
            kind = "model_loading_array" if isinstance(path_or_bytes, (bytes, bytearray)) else "model_loading_uri"
            self._profiler.span(kind, start, loaded)
            self._profiler.span("session_initialization", loaded, time.perf_counter())
        log(1, f"session initialized: plan '{self.session.plan.name}', {len(self.session.plan.nodes)} nodes on "
               f"runtime_{self.session.runtime} in {time.perf_counter() - start:.3f} s", so.logid, "InferenceSession")
        self._in_dtypes = {a.name: a.dtype for a in self.session.get_inputs() if a.type.startswith("tensor(")}
        if so.optimized_model_filepath:   # the graph after ge's passes, as ONNX (ge/ort/export.py)
            from .export import write_optimized
            write_optimized(model, options, so.config_entries, so.optimized_model_filepath)

    # -- runs ------------------------------------------------------------------------------------------
    def run(self, output_names, input_feed: dict, run_options=None) -> list[np.ndarray]:
        """Outputs named (all when None or empty) from input_feed {input name: array, list or OrtValue}."""
        if run_options is None and self._profiler is None:
            try:   # straight to ge.Session.run: the drop-in adds nothing to a run (bench/ort_dropin.py)
                return self._session_run(output_names or None, input_feed)
            except (ValueError, TypeError) as e:   # ge's InputError is a ValueError: a list to convert, perhaps
                if type(input_feed) is not dict or all(type(v) is np.ndarray for v in input_feed.values()):
                    self._missing(input_feed, e)
                    raise
        return self._run(output_names, input_feed, run_options, None)

    def _missing(self, feeds, error) -> None:
        """onnxruntime's words for feeds that lack inputs (scripts match them), then ge's message."""
        if isinstance(feeds, dict) and isinstance(error, InputError):
            missing = [a.name for a in self.session.get_inputs() if a.name not in feeds]
            if missing and str(error).startswith("missing input"):
                raise InputError(f"Required inputs ({missing}) are missing from input feed ({list(feeds)}). "
                                 f"({error})") from None

    def _run(self, output_names, feeds, run_options, bound) -> list[np.ndarray]:
        if run_options is not None and run_options.terminate:
            raise ExecutionError("Exiting due to terminate flag being set to true (RunOptions.terminate)")
        if type(feeds) is dict:
            for v in feeds.values():
                if type(v) is not np.ndarray:   # lists, scalars, OrtValues: converted once, here
                    feeds = self._converted(feeds)
                    break
        if self._profiler is None:
            try:
                out = self.session.run(output_names or None, feeds, bound)
            except InputError as e:
                self._missing(feeds, e)
                raise
            if run_options is not None and "cpu" in run_options.run_config_entries.get(
                    "memory.enable_memory_arena_shrinkage", ""):
                self.session.empty_cache()   # onnxruntime's arena shrinkage: ge's cached device memory back
            return out
        out = self._profiler.run(self.session, feeds)
        index = {o.name: k for k, o in enumerate(self.session.get_outputs())}
        unknown = [n for n in output_names or () if n not in index]
        if unknown:
            raise InputError(f"unknown output {unknown[0]!r}; outputs: {', '.join(index)}")
        for name, buf in (bound or {}).items():
            np.copyto(buf, out[index[name]])
            out[index[name]] = buf
        return [out[index[n]] for n in output_names] if output_names else out

    def _converted(self, feeds: dict) -> dict:
        out = {}
        for name, v in feeds.items():
            if isinstance(v, OrtValue):
                v = v.numpy()
            elif not isinstance(v, np.ndarray) and name in self._in_dtypes and not isinstance(v, type(None)):
                try:
                    v = np.asarray(v, dtype=self._in_dtypes[name])
                except (TypeError, ValueError) as e:
                    raise InputError(f"input '{name}': cannot convert {type(v).__name__} to "
                                     f"{self._in_dtypes[name]} ({e})") from None
            out[name] = v
        return out

    def run_with_ort_values(self, output_names, input_dict_ort_values: dict, run_options=None) -> list[OrtValue]:
        return [OrtValue(a) for a in self._run(output_names, input_dict_ort_values, run_options, None)]

    def run_with_ortvaluevector(self, run_options, feed_names, feeds, fetch_names, fetches, fetch_devices=None):
        """onnxruntime's low-level form: feeds and fetches as OrtValueVectors, outputs appended to `fetches`."""
        values = list(feeds)
        if len(values) != len(feed_names):
            raise InputError(f"run_with_ortvaluevector: {len(feed_names)} feed names but {len(values)} feeds")
        for a in self._run(fetch_names, dict(zip(feed_names, values)), run_options, None):
            fetches.push_back(OrtValue(a))

    def run_async(self, output_names, input_feed: dict, callback, user_data, run_options=None) -> None:
        """Run on another thread; then callback(outputs, user_data, "") or, on error, callback([], user_data,
        the message). Feeds naming no input fail here, before the thread starts, as onnxruntime's do."""
        if not callable(callback):
            raise InputError(f"run_async: callback must be callable, not {type(callback).__name__}")
        missing = [n for n in self._in_dtypes if isinstance(input_feed, dict) and n not in input_feed]
        if missing:
            raise InputError(f"Required inputs ({missing}) are missing from input feed ({list(input_feed)}).")

        def work():
            try:
                out = self._run(output_names, input_feed, run_options, None)
            except Exception as e:  # noqa: BLE001 - every failure is the callback's to see
                callback([], user_data, str(e))
                return
            callback(out, user_data, "")
        threading.Thread(target=work, name="ge-run-async", daemon=True).start()

    def io_binding(self) -> IOBinding:
        return IOBinding(self)

    def run_with_iobinding(self, iobinding: IOBinding, run_options=None) -> None:
        iobinding._run(run_options)

    # -- what the session is -------------------------------------------------------------------------
    def get_inputs(self) -> list[NodeArg]:
        return [_unnamed(a) for a in self.session.get_inputs()]

    def get_outputs(self) -> list[NodeArg]:
        return [_unnamed(a) for a in self.session.get_outputs()]

    def get_input_memory_infos(self) -> list[OrtMemoryInfo]:
        return [OrtMemoryInfo() for _ in self.session.get_inputs()]

    def get_output_memory_infos(self) -> list[OrtMemoryInfo]:
        return [OrtMemoryInfo() for _ in self.session.get_outputs()]

    def get_input_epdevices(self) -> list:
        """None for each input: the CPU provider has no plugin device (onnxruntime's entries may be None)."""
        return [None for _ in self.session.get_inputs()]

    def get_overridable_initializers(self) -> list:
        """[]: ge compiles initializers into the plan (folded, packed), so none can be fed in their place."""
        return []

    @property
    def _sess(self) -> "_CSession":
        """onnxruntime's native session object, which scripts reach for its low-level calls."""
        return _CSession(self)

    def get_provider_graph_assignment_info(self) -> list["EpAssignedSubgraph"]:
        """Per node of the model, the provider it runs on (ge: all on its one, the CPU provider), as
        onnxruntime gives it when `session.record_ep_graph_assignment_info` is "1"."""
        if self._sess_options.config_entries.get("session.record_ep_graph_assignment_info") != "1":
            raise Fail("Session configuration entry 'session.record_ep_graph_assignment_info' must be set to \"1\" "
                       "to record the providers' graph assignment")
        return [EpAssignedSubgraph(prov.CPU, (EpAssignedNode(n.name, n.op_type, n.domain),))
                for n in _model_nodes(self._model)]

    def get_providers(self) -> list[str]:
        return [prov.CPU]

    def get_provider_options(self) -> dict:
        return prov.cpu_options(self._requested)

    def set_providers(self, providers=None, provider_options=None) -> None:
        requested = prov.normalize(providers, provider_options)
        prov.check_providers(requested, strict=True)
        self._requested = requested

    def disable_fallback(self) -> None:
        """Nothing to fall back from: the CPU is the one provider."""

    def enable_fallback(self) -> None:
        """Nothing to fall back from: the CPU is the one provider."""

    def get_session_options(self) -> SessionOptions:
        return self._sess_options

    def get_modelmeta(self) -> ModelMetadata:
        meta = _metadata(self._model)
        return meta if meta is not None else ModelMetadata(graph_name=self.session.plan.name)

    def create_ortvalue_from_shape_and_type(self, shape, element_type, device_type: str = "cpu",
                                            device_id: int = 0, vendor_id: int = -1) -> OrtValue:
        return OrtValue.ortvalue_from_shape_and_type(shape, element_type, device_type, device_id, vendor_id)

    def release_captured_graph(self, graph_annotation_id: int = 0) -> None:
        """Nothing to release: graphs are captured by GPU providers only."""

    def get_tuning_results(self) -> list:
        """[]: ge's kernels have no tunable ops (their tiling is chosen when the plan is compiled)."""
        return []

    # -- profiling -------------------------------------------------------------------------------------
    def get_profiling_start_time_ns(self) -> int:
        return self._profiler.start_ns if self._profiler is not None else 0

    def end_profiling(self) -> str:
        """Write the profile in onnxruntime's format (and ge's trace beside it); its file name ("" when the
        session is not profiling). Profiling stops, as onnxruntime's does."""
        if self._profiler is None:
            return ""
        name = self._profiler.write(self.session.plan)
        self._profiler, self._trace_file = None, trace_name(name)
        return name

    @property
    def profiling_trace_file(self) -> str:
        """ge: the Perfetto trace end_profiling wrote beside onnxruntime's profile ("" before)."""
        return self._trace_file

    # -- ge ------------------------------------------------------------------------------------------
    @property
    def plan(self):
        return self.session.plan

    def close(self) -> None:
        """Release the device memory now (onnxruntime waits for the garbage collector); OrtValues from its
        runs stay valid, and a later run raises GEError."""
        self.session.close()


def _options_from_model(model, given: SessionOptions) -> SessionOptions:
    """onnxruntime's ORT_LOAD_CONFIG_FROM_MODEL=1: the model's metadata "ort_config" (JSON,
    {"session_options": {field: value}}) sets those SessionOptions fields over a copy of the given ones."""
    meta = _metadata(model)
    text = meta.custom_metadata_map.get("ort_config") if meta is not None else None
    if not text:
        return given
    try:
        fields = json.loads(text).get("session_options", {})
    except (ValueError, AttributeError) as e:
        raise InputError(f"the model's ort_config metadata is not JSON with a session_options object ({e})") from None
    out = copy.copy(given)
    out.config_entries = dict(given.config_entries)
    for key, value in fields.items():
        if not hasattr(out, key) or callable(getattr(out, key)):
            raise InputError(f"the model's ort_config names '{key}', which is not a SessionOptions field")
        kind = type(getattr(out, key))
        setattr(out, key, kind(value) if kind is not bool else bool(int(value)))
    return out


def _unnamed(arg: NodeArg) -> NodeArg:
    """A dim the model leaves unnamed is None, as onnxruntime shows it (ge's importer calls it unk__<n>:
    ge/frontends/onnx.py)."""
    if not any(isinstance(d, str) and d.startswith("unk__") for d in arg.shape):
        return arg
    return dataclasses.replace(arg, shape=[None if isinstance(d, str) and d.startswith("unk__") else d
                                           for d in arg.shape])


def _describe(model) -> str:
    return f"'{model}'" if isinstance(model, str) or hasattr(model, "__fspath__") else f"from {type(model).__name__}"


def _metadata(model) -> ModelMetadata | None:
    """The ONNX model's metadata, when `model` is an ONNX file, bytes or ModelProto."""
    from ..frontends.onnx import load_model
    try:
        proto, _, _ = load_model(model)
    except Exception:  # noqa: BLE001 - an offline plan or a TensorFlow graph has no ONNX metadata
        return None
    return ModelMetadata(proto.producer_name, proto.graph.name, proto.domain, proto.doc_string,
                         proto.graph.doc_string, proto.model_version,
                         {p.key: p.value for p in proto.metadata_props})


@dataclass(frozen=True)
class EpAssignedNode:
    name: str
    op_type: str
    domain: str


@dataclass(frozen=True)
class EpAssignedSubgraph:
    ep_name: str
    nodes: tuple

    def get_nodes(self) -> list[EpAssignedNode]:
        return list(self.nodes)


def _model_nodes(model) -> list:
    """The top graph's nodes of a model given as a path, bytes or a ModelProto (a .gem: its plan's nodes)."""
    import onnx  # noqa: PLC0415
    if hasattr(model, "graph"):
        return list(model.graph.node)
    if isinstance(model, (bytes, bytearray)):
        return list(onnx.load_from_string(bytes(model)).graph.node)
    if str(model).endswith(".gem"):
        return []
    return list(onnx.load(str(model), load_external_data=False).graph.node)


class _CSession:
    """The native session's calls scripts use: `run_with_ort_values(feeds, output_names, run_options)` (feeds
    {name: OrtValue}, an OrtValueVector back) and `run(output_names, feeds, run_options)`."""

    def __init__(self, owner: InferenceSession):
        self._owner = owner

    def run_with_ort_values(self, feeds: dict, output_names, run_options=None):
        from .ortvalue import OrtValueVector  # noqa: PLC0415
        return OrtValueVector(self._owner.run_with_ort_values(output_names, feeds, run_options))

    def run(self, output_names, feeds, run_options=None):
        return self._owner.run(output_names, feeds, run_options)

    def run_with_iobinding(self, binding, run_options=None):
        return self._owner.run_with_iobinding(binding, run_options)

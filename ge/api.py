"""Session: compile a model once, run it many times on the chosen runtime (ONNX Runtime-like API)."""
from __future__ import annotations

import copy
import dataclasses
import errno
import importlib
from dataclasses import dataclass

import numpy as np

from .compiler import compile as compile_model
from .compiler import compile_gears
from .dynamic_reasons import dynamic_reasons, runtime_reason
from .partition import stats as pieces_stats
from .errors import DeviceMemoryError, GEError, InputError
from .gear_fallback import GearsOrV2
from .hccl.ops import collectives
from .ir import Graph
from .ir.dtypes import STRING, as_strings, to_onnx
from .kv_cache import check_feeds as check_kv_feeds
from .kv_cache import layout as kv_layout
from .npu import progress
from .npu.thunk_cache import problems as cache_problems
from .offline import is_offline_model
from .offline import load as load_plan
from .options import as_options
from .parallel.executor import join as join_group
from .parallel.executor import resolve as resolve_group
from .plan import Executor, GearPlans, Plan, runs_on_v1
from .progress_bar import reporting
from .warmup import before_first_run

RUNTIMES = ("v1", "v2")
_ONNX_TYPE_NAMES = {"float32": "float", "float64": "double", "bool": "bool", "object": "string"}


@dataclass(frozen=True)
class NodeArg:
    """An input or output as ONNX Runtime describes it: name, shape (ints or symbolic names), type."""
    name: str
    shape: list
    type: str
    dtype: np.dtype


def _node_arg(t) -> NodeArg:
    name = _ONNX_TYPE_NAMES.get(t.dtype.name, t.dtype.name)
    to_onnx(t.dtype)  # only types ONNX knows reach here
    kind = {"sequence": "seq(tensor({}))", "optional": "optional(tensor({}))",
            "optional_sequence": "optional(seq(tensor({})))"}.get(t.value_kind, "tensor({})")
    if "map(" in t.value_kind:   # map(K) / seq(map(K)): onnxruntime's "seq(map(int64,tensor(float)))"
        kind = t.value_kind.replace(")", ",tensor({}))", 1)
    return NodeArg(t.name, [] if "map(" in t.value_kind else list(t.shape), kind.format(name), t.dtype)


def _as_text(a: np.ndarray, name: str) -> np.ndarray:
    """A string input as ge's object array of str (onnxruntime takes numpy str_, bytes_ and object arrays);
    an element that is not text is an InputError."""
    if a.dtype.kind == "O" and not all(isinstance(x, (str, bytes)) for x in a.reshape(-1)):
        bad = next(x for x in a.reshape(-1) if not isinstance(x, (str, bytes)))
        raise InputError(f"input '{name}' is tensor(string) but holds a {type(bad).__name__} ({str(bad)[:40]!r})")
    if a.dtype.kind == "O" and all(type(x) is str for x in a.reshape(-1)):
        return a
    return as_strings(a)


def _as_array(a, name: str) -> np.ndarray:
    """A feed given as a Python value (list, scalar) as an array; a ragged list is an InputError."""
    try:
        return np.asarray(a)
    except (ValueError, TypeError, OverflowError) as e:
        raise InputError(f"input '{name}' is not an array: {type(a).__name__} that numpy cannot make one of "
                         f"({str(e)[:160]})") from None


def _strip_port(name: str, known) -> str:
    """TensorFlow names tensors "op:0"; ge names a node's first output "op". Accept both."""
    if name not in known and isinstance(name, str) and name.endswith(":0") and name[:-2] in known:
        return name[:-2]
    return name


def _load(runtime: str, model: Plan | GearPlans) -> Executor:
    """runtime_<runtime>.load(model); a host that cannot back the modelled device is a DeviceMemoryError,
    not a bare OSError/MemoryError (e.g. device_memory_bytes larger than the address space can map)."""
    plan = model.plans[model.gears[-1]] if isinstance(model, GearPlans) else model
    try:
        return importlib.import_module(f"runtime_{runtime}").load(model)
    except GEError:
        raise
    except (MemoryError, OSError) as e:
        if isinstance(e, OSError) and e.errno != errno.ENOMEM:
            raise
        capacity = plan.options.device_memory_bytes
        raise DeviceMemoryError(capacity, capacity, 0, f"runtime_{runtime}'s modelled device of '{plan.name}' "
                                f"(the host refused: {type(e).__name__}: {e})") from e


def available_runtimes() -> list[str]:
    found = []
    for rt in RUNTIMES:
        try:
            module = importlib.import_module(f"runtime_{rt}")
        except ModuleNotFoundError as e:
            if e.name != f"runtime_{rt}":   # a broken runtime is an error, not an absent one
                raise
            continue
        if hasattr(module, "load"):
            found.append(rt)
    return found


class Session:
    """ge.Session(model, runtime="v2", options=...) then run(output_names | None, feeds).

    For TensorFlow models, `inputs`/`outputs` name the feed and result tensors ("x" or "x:0"); by default
    the Placeholders and the graph's sinks.
    """

    def __init__(self, model, runtime: str = "auto", options=None, *, inputs=None, outputs=None):
        self.options = as_options(options)
        self._warm = False   # the first run may compile kernels: it reports (ge.progress_bar.reporting)
        self._warmable = False   # a plain executor of self.plan: its kernels can be compiled before that run
        with reporting(self.options):   # logger "ge"; a bar with Options(progress=True) or GE_PROGRESS=1
            self._init(model, runtime, inputs, outputs)

    def _init(self, model, runtime, inputs, outputs) -> None:
        if isinstance(runtime, str) and runtime.startswith("runtime_"):   # the package's name: "runtime_v1"
            runtime = runtime[len("runtime_"):]
        if is_offline_model(model):  # a saved plan (ge.save): its compile options come from the file
            model = load_plan(model)
        self.gear_plans = None  # ge.plan.GearPlans when runtime_v1 runs gears (dynamic_batch, dynamic_dims)
        self._kv = None  # the cache inputs of a plan compiled with kv_cache_max_len (ge/kv_cache.py)
        # the model as given, to compile again at a run's shapes for a trace (run_traced); a Graph is
        # rewritten in place by the passes, a Plan is already compiled: neither can be
        self._source = None if isinstance(model, (Graph, Plan, GearPlans)) else model
        self._at_shapes: dict = {}
        if self.options.dynamic_batch or self.options.dynamic_dims or isinstance(model, GearPlans):
            what = "dynamic_dims" if self.options.dynamic_dims else "dynamic_batch"
            if isinstance(model, Plan):
                raise GEError(f"{what} compiles one plan per gear from the model; a compiled Plan or "
                              "offline model (.gem) of one plan cannot: pass the model, or gears saved by "
                              f"`ge compile --{what.replace('_', '-')}` / GearPlans.save")
            auto, runtime = runtime == "auto", self._pick_geared_runtime(runtime)
            if runtime == "v1":   # auto: dims gears keep a dynamic plan for runtime_v2 (ge/gear_fallback.py)
                # (kv_cache_static: every step a gear, prefill plans beside the one-token step; no fallback)
                self._init_geared(model if isinstance(model, GearPlans) else compile_gears(
                    model, self.options, inputs=inputs, outputs=outputs,
                    fallback=auto and not self.options.kv_cache_static), auto)
                return
            if isinstance(model, GearPlans):
                if model.fallback is None and model.dims:
                    raise GEError("these dims gears hold no dynamic plan for runtime_v2 (compile_gears(..., "
                                  "fallback=True) and `ge compile --dynamic-dims` save one): pass the model itself")
                if model.fallback is None:
                    _load("v2", model)   # refuses them, saying why
                model = model.fallback   # dims gears saved with their dynamic plan
            else:   # runtime_v2 runs the real shapes dynamically: it needs no gears
                model = compile_model(model, self.options.replace(dynamic_batch=(), dynamic_dims=()),
                                      inputs=inputs, outputs=outputs)
        options, end = self.options, None
        if isinstance(model, Plan):
            options = model.options
        if options.parallel or options.device_count > 1:   # the group first: its size shapes the plan
            options, end = resolve_group(options)
        source = copy.deepcopy(model) if isinstance(model, Graph) and options.parallel == "tensor" else model
        self.plan: Plan = model if isinstance(model, Plan) else compile_model(
            model, options, inputs=inputs, outputs=outputs)
        self.runtime = self._pick_runtime(runtime, self.plan)
        self._reason = runtime_reason(self.plan, self.runtime, runtime)
        ins = [self.plan.tensors[i] for i in self.plan.inputs]
        if end is not None or options.device_count > 1 or collectives(self.plan):
            other = None   # tensor parallel: every device of this process compiles its own slices
            if options.parallel == "tensor" and end is None and isinstance(model, Plan) and options.device_count > 1:
                raise GEError(f"plan '{model.name}' is one device's slices of a tensor-parallel model: in one "
                              "process give the model (each device compiles its own), or run one rank a "
                              "process under mpiexec, each loading its own plan")
            if options.parallel == "tensor" and end is None and not isinstance(model, Plan):
                other = lambda d: compile_model(copy.deepcopy(source) if isinstance(source, Graph) else source,  # noqa: E731
                                                options.replace(device_id=d), inputs=inputs, outputs=outputs)
            self._executor: Executor = join_group(self.plan, options, lambda p: _load(self.runtime, p), end,
                                                  other)
            if options.parallel == "data":   # the caller feeds the whole batch (each device reads its rows)
                ins = [dataclasses.replace(t, shape=(t.shape[0] * options.device_count, *t.shape[1:]))
                       for t in ins]
        else:
            with progress.phase("runtime load"):
                self._executor = _load(self.runtime, self.plan)
            self._warmable = True
        self._describe(ins, [self.plan.tensors[i] for i in self.plan.outputs])
        self._kv = kv_layout(self.plan)

    def _init_geared(self, gp: GearPlans, auto: bool = False) -> None:
        """runtime_v1 over gears: one static plan per gear, memory shared; with `auto`, dims gears run the
        shapes no gear matches on runtime_v2 (their fallback plan)."""
        self.gear_plans = gp
        self.plan = gp.plans[max(gp.plans)]  # the largest gear's plan
        self.runtime = "v1"
        kind = "dims gears" if gp.dims else "batch gears"
        self._reason = f"{kind} {list(gp.gears)}: one static plan per gear on runtime_v1"
        self._executor = _load("v1", gp)
        if auto and gp.dims and gp.fallback is not None and "v2" in available_runtimes():
            self._executor = GearsOrV2(self._executor, gp, lambda: _load("v2", gp.fallback))
            self._reason += ", other shapes on runtime_v2"
        self._describe(list(gp.inputs), list(gp.outputs))
        self._kv = kv_layout(self.plan)

    def _describe(self, inputs, outputs) -> None:
        self._inputs, self._outputs = inputs, outputs
        self._out_index = {t.name: k for k, t in enumerate(self._outputs)}
        self._in_names = frozenset(t.name for t in inputs)   # asked on every run: made once
        self._carried = frozenset(self.plan.tensors[i].name for i, _ in self.plan.states)

    @staticmethod
    def _pick_geared_runtime(runtime: str) -> str:
        if runtime == "auto":  # gears are what lets v1's task sink run a symbolic batch
            return "v1" if "v1" in available_runtimes() else "v2"
        return Session._pick_runtime(runtime, None)

    @staticmethod
    def _pick_runtime(runtime: str, plan: Plan | None) -> str:
        have = available_runtimes()
        kv = plan is not None and plan.options.kv_cache_max_len
        if runtime == "auto":
            # v1's task sink for static plans, static If / Loop / Scan included (20 ns vs 0.5 us host time per
            # node, measured); v2 for shapes known only at run time, which v1 refuses; the KV cache in place
            # on v2 (the step's shapes follow the past)
            # (kv_cache_static: one static step plan, which runtime_v1 binds in place too)
            return "v1" if "v1" in have and runs_on_v1(plan) and (not kv or plan.options.kv_cache_static) else "v2"
        if runtime == "v1" and kv and not plan.options.kv_cache_static:
            raise GEError("kv_cache_max_len runs on runtime_v2 (its step shapes follow the past); runtime_v1 takes "
                          "Options(kv_cache_static=True), one static step plan: runtime='v2' or 'auto'")
        if runtime not in RUNTIMES:
            raise GEError(f"unknown runtime '{runtime}': choose one of {', '.join(RUNTIMES)} or 'auto'")
        if runtime not in have:
            raise GEError(f"runtime_{runtime} is not available in this build; available: {', '.join(have)}")
        return runtime

    def allocator_stats(self) -> dict:
        """Device memory of this session's runtime: capacity, in use, peak, and (runtime_v2) the caching
        allocator's counters (allocated, reserved, peaks, hits, misses...)."""
        return self._executor.allocator_stats()

    def stats(self) -> dict:
        """The runtime's counters (runtime_v1: zero-copy bindings, native and fallback tasks, streams...;
        runtime_v2: steps, instances, stream threads), with `runtime` ("v1" / "v2") and `runtime_reason`:
        why it runs there (runtime="auto": the plan is static, or which nodes have shapes known only at run
        time and why); "static_pieces" (runtime_v2): what of a dynamic plan runs on runtime_v1's task sink
        ({"pieces", "sunk_nodes", "nodes", "host_driven", "line"}, ge/partition.py); "thunk_cache": the problems met with the thunk and Numba caches (a refused folder, a
        damaged entry quarantined), each also warned once; [] when none."""
        out = {**self._executor.stats(), "runtime": self.runtime, "runtime_reason": self._reason,
               "thunk_cache": cache_problems()}
        if isinstance(self.plan, Plan) and self.runtime == "v2":   # the pieces it sank (ge/partition.py)
            out["static_pieces"] = pieces_stats(self.plan)
        return out

    @property
    def stream_threads(self) -> int:
        """Host threads the runtime gives the plan's streams."""
        return self._executor.stream_threads

    def empty_cache(self) -> None:
        """Give cached device memory back (idle executor instances and their caches)."""
        self._executor.empty_cache()

    def close(self) -> None:
        """Release the session's device memory; runs after this raise GEError."""
        for sess in (self._at_shapes or {}).values():
            sess.close()
        self._executor.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get_inputs(self) -> list[NodeArg]:
        return [_node_arg(t) for t in self._inputs]

    def get_outputs(self) -> list[NodeArg]:
        return [_node_arg(t) for t in self._outputs]

    def warm_up(self) -> None:
        """Compile (or load from the disk cache) the kernels the first run would call, once, reported kernel
        by kernel (ge.warmup.before_first_run); the first run does it when nobody did."""
        if self._warmable:
            self._warmable = False
            with reporting(self.options), progress.phase("warm-up"):
                before_first_run(self)

    def run(self, output_names, feeds: dict, outputs: dict | None = None, *, feature_base=None,
            kv_cache=None) -> list[np.ndarray]:
        """Outputs named in output_names (all when None), computed from feeds {input name: array}.

        `kv_cache=ge.KVCache(session)` (a model compiled with Options(kv_cache_max_len=N)): the past
        key/value inputs are the cache's buffers, the step writes its new rows there in place and the cache's
        length grows by the step's tokens (docs/kv-cache.md).

        `outputs={name: array}` writes those results into the caller's arrays (and returns them).
        `feature_base=array` (runtime_v1, Options(feature_base_refreshable=True)): this run and the next ones
        compute their refreshable feature map in the caller's array (GE's
        UpdateGraphRefreshableFeatureMemoryBase); the fixed part (Options.fixed_address_ops) stays resident.
        """
        new = 0
        if kv_cache is not None:
            if not isinstance(feeds, dict):
                raise InputError(f"feeds must be a dict of input name -> array, not {type(feeds).__name__}")
            feeds, new = kv_cache.feeds(feeds)
        elif self._kv is not None and isinstance(feeds, dict):
            check_kv_feeds(self._kv, feeds)
        if not self._warm:   # the first run compiles what is not compiled yet: said (ge.progress_bar)
            with reporting(self.options):
                self.warm_up()
                with progress.phase("first run"):
                    out = self._run(output_names, feeds, outputs, feature_base)
            self._warm = True
        else:
            out = self._run(output_names, feeds, outputs, feature_base)
        if kv_cache is not None:
            kv_cache.advance(new)
        return out

    def _run(self, output_names, feeds, outputs, feature_base) -> list[np.ndarray]:
        if feature_base is not None:
            rebase = getattr(self._executor, "update_feature_memory_base", None)
            if rebase is None:
                raise GEError(f"feature_base: runtime_{self.runtime} has no refreshable feature map (runtime_v2 "
                              "plans memory per run); use runtime='v1' with feature_base_refreshable=True")
            rebase(feature_base)
        picked = self._pick_outputs(output_names)
        if outputs:
            self._check_bound(outputs)
        bound = None  # runtimes that bind outputs compute straight into the caller's arrays (zero copy)
        if outputs and self._executor.binds_outputs:
            names = ((_strip_port(n, self._out_index), b) for n, b in outputs.items())
            bound = {self._out_index[n]: b for n, b in names if n in self._out_index}
        feeds = self._check_feeds(feeds)
        results = self._executor.run(feeds) if bound is None else self._executor.run(feeds, outputs=bound)
        if outputs:
            for name, buf in outputs.items():
                name = _strip_port(name, self._out_index)
                if name not in self._out_index:
                    raise InputError(f"bound output '{name}' is not an output of the model; outputs: "
                                     f"{', '.join(self._out_index)}")
                r = results[self._out_index[name]]
                if buf.shape != r.shape or buf.dtype != r.dtype:
                    raise InputError(f"bound output '{name}' is {buf.dtype}{list(buf.shape)}, "
                                     f"the model gives {r.dtype}{list(r.shape)}")
                if r is not buf:
                    np.copyto(buf, r)
                results[self._out_index[name]] = buf
        return [results[k] for k in picked]

    def run_traced(self, feeds: dict, tracer) -> list[np.ndarray]:
        """One run of all outputs, recording each task (and each event) as a slice on `tracer`
        (ge.npu.Tracer): one track per stream. Slower than run(); for profiles (`ge profile`).
        runtime_v2 traces a plan with shapes known only at run time on one host thread only once they are
        fixed: the model is compiled again at the feeds' shapes (cached per shape) and that plan traced."""
        if self.runtime == "v2" and self.plan.is_dynamic and self.stream_threads <= 1:
            if self._at_shapes is None:   # this session is already the model at fixed shapes: data decides
                why = dynamic_reasons(self.plan)
                raise GEError(f"cannot trace plan '{self.plan.name}': with its input shapes fixed it still has "
                              f"shapes known only at run time ({why[0] if why else 'dynamic nodes'}), and runtime_v2 "
                              "traces such a plan only on several stream threads; it has one"
                              + (f" ({self.plan.single_stream_reason})" if self.plan.single_stream_reason else "")
                              + ("; runtime_v1 traces it (ge profile --runtime v1)" if runs_on_v1(self.plan) else ""))
            return self.at_shapes(feeds).run_traced(feeds, tracer)
        if hasattr(tracer, "label_nodes") and not getattr(tracer, "nodes", None):
            tracer.label_nodes(self.plan)   # slices named by op type and node, shapes in their args
        return self._executor.run_traced(self._check_feeds(feeds), tracer)

    def at_shapes(self, feeds: dict) -> "Session":
        """A session of this model with every input shape fixed to the feeds' (Options.input_shape), on this
        session's runtime; cached per shape. For traces and tools that need a plan without run-time shapes."""
        self._check_feeds(feeds)
        if self._at_shapes is None:   # already one
            return self
        shapes = tuple((t.name, tuple(np.shape(feeds[t.name]))) for t in self._inputs
                       if t.value_kind == "tensor" and t.name in feeds)
        if shapes not in self._at_shapes:
            if self._source is None:
                raise GEError(f"plan '{self.plan.name}' has shapes known only at run time and was given compiled "
                              "(or as an ir.Graph): to trace or profile it, compile the model with its input "
                              "shapes fixed (Options(input_shape=...), `ge compile --input-shape`)")
            sess = Session(self._source, self.runtime, self.options.replace(
                input_shape=shapes, enable_dynamic_shape_multi_stream=True))
            sess._at_shapes = None   # it compiles no further sessions
            self._at_shapes[shapes] = sess
        return self._at_shapes[shapes]

    def _check_bound(self, outputs) -> None:
        """Bound outputs are writable numpy arrays (their shape and dtype are checked after the run)."""
        if not isinstance(outputs, dict):
            raise InputError(f"outputs must be a dict of output name -> array, not {type(outputs).__name__}")
        for name, buf in outputs.items():
            if not isinstance(buf, np.ndarray):
                raise InputError(f"bound output '{name}' must be a numpy array, not {type(buf).__name__}")
            if not buf.flags.writeable:
                raise InputError(f"bound output '{name}' is read-only")

    def _pick_outputs(self, names) -> list[int]:
        if names is None:
            return list(range(len(self._outputs)))
        try:
            return [self._out_index[_strip_port(n, self._out_index)] for n in names]
        except KeyError as e:
            raise InputError(f"unknown output {e.args[0]!r}; outputs: {', '.join(self._out_index)}") from None

    def _check_feeds(self, feeds: dict) -> dict[int, np.ndarray]:
        if not isinstance(feeds, dict):
            raise InputError(f"feeds must be a dict of input name -> array, not {type(feeds).__name__}")
        expected = self._in_names
        if not expected.issuperset(feeds):
            feeds = {_strip_port(k, expected): v for k, v in feeds.items()}
            extra = sorted(set(feeds) - expected)
            if extra:
                raise InputError(f"unknown input(s) {', '.join(map(repr, extra))}; inputs: {', '.join(expected)}")
        out, dims = {}, {}
        carried = self._carried  # the last run's state when not fed
        for t in self._inputs:
            if t.name not in feeds and t.name in carried:
                continue
            if t.name not in feeds:
                raise InputError(f"missing input '{t.name}' ({t.dtype}{list(t.shape)})")
            a = feeds[t.name]
            if t.value_kind != "tensor":
                out[t.index] = self._host_feed(t, a)
                continue
            if not isinstance(a, np.ndarray):
                a = _as_array(a, t.name)
            if a.dtype != t.dtype or a.dtype.hasobject:   # (one compare on the numeric path)
                if t.dtype == STRING and a.dtype.kind in "OUSV":   # str_ / bytes_ / void / object arrays of text
                    a = _as_text(a, t.name)
                if a.dtype != t.dtype:
                    raise InputError(f"input '{t.name}' has dtype {a.dtype}, expected {t.dtype}")
            if len(a.shape) != len(t.shape):
                raise InputError(f"input '{t.name}' has shape {list(a.shape)}, expected {list(t.shape)}")
            for got, want in zip(a.shape, t.shape):
                if isinstance(want, str):
                    want = dims.setdefault(want, got)  # a symbolic dim binds once per run
                if got != want:
                    raise InputError(f"input '{t.name}' has shape {list(a.shape)}, expected "
                                     f"{list(t.shape)}" + (f" with {dims}" if dims else ""))
            out[t.index] = a if a.flags.c_contiguous else a.copy()  # (np.ascontiguousarray makes 0-d 1-d)
        return out

    @staticmethod
    def _host_feed(t, a):
        """A sequence (list of arrays) or optional (None or its element) input, its element dtype checked."""
        if a is None and t.value_kind.startswith("optional"):
            return None
        if "map(" in t.value_kind:   # map(K) / seq(map(K)) of ONNX-ML: a dict, or a list of dicts
            maps = a if t.value_kind.startswith("seq(") else [a]
            if not isinstance(maps, (list, tuple)) or not all(isinstance(m, dict) for m in maps):
                raise InputError(f"input '{t.name}' is a {t.value_kind}: give "
                                 f"{'a list of dicts' if t.value_kind.startswith('seq(') else 'a dict'}")
            return list(maps) if t.value_kind.startswith("seq(") else a
        seq = t.value_kind in ("sequence", "optional_sequence")
        if seq != isinstance(a, (list, tuple)):
            raise InputError(f"input '{t.name}' is a {t.value_kind}: give "
                             f"{'a list of arrays' if seq else 'an array'}{' or None' * (t.value_kind != 'sequence')}")
        items = [_as_array(x, t.name) for x in a] if seq else [_as_array(a, t.name)]
        for x in items:
            if x.dtype != t.dtype:
                raise InputError(f"input '{t.name}' ({t.value_kind}) holds dtype {x.dtype}, expected {t.dtype}")
        items = [x if x.flags.c_contiguous else x.copy() for x in items]
        return items if seq else items[0]

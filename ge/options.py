"""Options: one typed dataclass; GE's option names are accepted as aliases (Options.from_dict).

Every name and value is checked: an unknown option (keyword or GE-style key) is a GEError listing the close
matches, and a value of the wrong type or out of its range names the option and the range. No GE option is
dropped silently: each GE name either sets a field (GE_ALIASES), is GE's default and changes nothing, or is
refused with the reason ge does not do it (GE_REFUSED). docs/options.md's "GE options" table lists them all.
"""
from __future__ import annotations

import dataclasses
import difflib
import numbers
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .errors import GEError
from .option_values import (  # noqa: F401 - the value parsers; GE_ENGINE_NAMES, MEMORY_POLICY re-exported
    GE_ENGINE_NAMES, MAX_GEARS, MAX_STREAMS, MEMORY_POLICY, STREAM_MODES, SYNC_KINDS, _GE_ENGINES, _ac_parallel,
    _auto_mode,
    _flag, _gears, _memory_policy, _static_memory_policy, _sync_kind, _with_memory_priority, engine_caps, input_shapes,
    _dims_gears, check_dynamic_dims,
    node_names_to)

TOPO_MODES = ("bfs", "dfs", "rdfs", "stable_rdfs", "memory_priority")
# integer options: (lowest, highest)
RANGES = {"max_streams": (1, MAX_STREAMS), "thread_budget": (0, 1 << 12), "aicore_num": (0, 1 << 12),
          "device_memory_bytes": (1, 1 << 50), "executor_instances": (1, 1 << 12),
          "atomic_clean_policy": (0, 1), "max_tasks_per_stream": (0, 1 << 30), "max_events": (0, 1 << 30),
          "gear_memory_split_bytes": (0, 1 << 50), "max_notifies": (1, 1024),
          "device_id": (-1, 1 << 16), "device_count": (1, 1 << 16), "capture_limit": (0, 1 << 12),
          "kv_cache_max_len": (0, 1 << 24),
          "static_model_ops_lower_limit": (0, 1 << 62), "compile_workers": (-1, 64)}
PARALLEL = ("", "data", "tensor")
FLAGS = ("verify_passes", "disable_reuse_memory", "inplace_memory", "concat_in_place", "enable_single_stream",
         "exact_ge_streams", "feature_base_refreshable", "event_multiplexing", "enable_dynamic_shape_multi_stream",
         "hcom_parallel", "activate_body_streams", "kv_cache_static")


def _unknown(name: str, known) -> GEError:
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)
    return GEError(f"unknown option {name!r}" + (f"; did you mean {', '.join(map(repr, close))}?" if close else
                                                  f"; options: {', '.join(sorted(known))}"))


@dataclass(frozen=True, init=False)
class Options:
    # compile
    disabled_passes: tuple[str, ...] = ()
    dump_after: tuple[str, ...] = ()
    verify_passes: bool = False
    topo_sorting_mode: str = "dfs"
    # memory
    disable_reuse_memory: bool = False
    # hybrid (smallest of all), blocks (smallest of the block strategies), or a name of ge.memory.hybrid.ASSIGNERS
    memory_assigner: str = "hybrid"
    inplace_memory: bool = False      # an output may overwrite a declared in-place input at its last read
    concat_in_place: bool = True      # producers write into their slices of a Concat's output, no copy
    # node names or op types whose outputs and workspaces get their own feature-map block, shared with nothing
    # (also GE's env OP_NO_REUSE_MEM="name_or_type,...", at most 10 entries; both lists apply)
    no_reuse_ops: tuple[str, ...] = ()
    # node names or op types whose tasks keep the addresses they were loaded with (GE: some HCOM/AICPU tasks
    # cannot take address refresh): the graph inputs they read and outputs they write are copied at the
    # boundary by runtime_v1, never bound zero copy (also the node attribute `_no_address_refresh`)
    fixed_address_ops: tuple[str, ...] = ()
    # outputs a kernel accumulates into (Launch.atomic) are zeroed: 0 = GE's centralized AtomicAddrClean (one
    # "atomic" segment, never reused, zeroed once per run); 1 = per op (ge.exec.atomicCleanPolicy=1): each is
    # zeroed by its own task right before its producer, so it lives in the feature map and is reused
    atomic_clean_policy: int = 0
    # streams
    enable_single_stream: bool = False
    # a graph with dynamic shapes gets several streams too (GE's ge.enableDynamicShapeMultiStream, also the
    # environment's ENABLE_DYNAMIC_SHAPE_MULTI_STREAM=1; GE's default is one stream): runtime_v2 runs them on
    # their own threads, its caching allocator following GE's MIF protocol across them
    enable_dynamic_shape_multi_stream: bool = False
    max_streams: int = 8
    # how streams are given out (docs/ge-reference.md §3.1, §3.2): "auto", ge's default (GE's
    # ge.autoMultistreamParallelMode names its auto pass): a node with no reusable predecessor (a sibling branch)
    # gets a new stream, up to max_streams; "engine", GE's default chain: at most stream_max_parallel_num streams
    # per engine (1 each unless given), new streams of an engine given out round robin
    stream_parallel_mode: str = "auto"
    # GE's ge.streamMaxParallelNum: per engine its most streams, ((engine, n), ...) from "AIcoreEngine:4,
    # VectorEngine:2", {engine: n} or pairs; GE's engine names or ge's (AICORE, AICPU, ...); both modes honour it
    stream_max_parallel_num: tuple = ()
    # the device's tasks per stream (GE: rtGetMaxStreamAndTask): a stream with more is split into pieces
    # joined by events (GE's SplitStreams, 27 tasks reserved); 0 = no cap (GE: unlimited-depth streams)
    max_tasks_per_stream: int = 0
    # GE's stream labels and parallel groups by node name (as the node attributes `_stream_label` and
    # `_parallel_group` do): ((node name, label), ...), from {name: label} or "name:label;name2:label2"
    stream_labels: tuple = ()
    parallel_groups: tuple = ()
    # GE's attached streams (ATTACHED_STREAM_INFO, AssignAttachedStreamPass) by node name, as the node attribute
    # `_attached_stream_key` does: ((node name, reuse key), ...): such a node's task runs on an extra stream
    # numbered after the main ones, one per reuse key
    attached_streams: tuple = ()
    # state carried run to run (a KV cache): ((output name, input name), ...) or {output: input}: each
    # run's output is that input of the next, in the plan's "variable" segment (the input may be left out of
    # the feeds: it is the last output, zeros at first; feeding it sets the state)
    state_pairs: tuple = ()
    # the KV cache in place (ge/kv_cache.py, docs/kv-cache.md): a decoder export's present = Concat(past, new)
    # outputs become one buffer per past input of this many rows, fed back by Session.run(kv_cache=...), each
    # step writing only its new rows; 0 = the export as it is
    kv_cache_max_len: int = 0
    # with kv_cache_max_len: one static step plan for every past length (docs/kv-cache.md): the new tokens
    # [batch, 1], the mask padded to kv_cache_max_len columns, the past length an input (`past_length`), so
    # the step runs on runtime_v1 (or replays on runtime_v2); ge.KVCache feeds it
    kv_cache_static: bool = False
    # event ids reused once both ends of their last use are done (GE's event multiplexing; schedule/multiplex.py)
    event_multiplexing: bool = False
    # the device's event ids (GE: EventAllocator::kMaxEventNum = 4096); a plan needing more is multiplexed,
    # and refused when still over; 0 = no cap
    max_events: int = 0
    # what syncs the streams (GE's option EVENT: "event", or "notify" for SendNotify/RecvNotify in place of
    # every event, GE's InsertSyncNodesWithNotify); a notify plan has at most max_notifies ids (GE's
    # kMaxNotifyNum = 1024, checked at compile), multiplexed when more are needed, else refused
    sync_kind: str = "event"
    max_notifies: int = 1024
    exact_ge_streams: bool = False    # GE's stream rules without ge's two refinements (for comparison)
    # threads that compute at once for a run: stream threads and AI cores share it; 0 = the CPUs of this process
    thread_budget: int = 0
    # AI cores the kernels are tiled for (GE's ge.aicoreNum / atc --aicore_num): a launch runs on at most this
    # many cores; 0 = the thread budget. Resolved when the plan is compiled (ge.npu.aicore.aicore_num)
    aicore_num: int = 0
    # runtime_v2: modelled device memory (planned arenas + caching allocator), concurrent instances
    device_memory_bytes: int = 4 << 30
    executor_instances: int = 8
    # runtime_v2 replays (CANN's aclgraph capture, TorchAir's reduce-overhead): the shapes (of the feeds) an
    # executor instance keeps recorded as native tables, least recently used evicted first; 0 = no replays
    # (so does the environment's GE_V2_REPLAY=0). See runtime_v2/replay.py
    capture_limit: int = 8
    # a plan that stays dynamic: each maximal static piece of at least this many tasks is compiled as a static
    # plan of its own and run by runtime_v1's task sink inside runtime_v2's host loop (GE's DynamicShapePartitioner
    # and ge.exec.static_model_ops_lower_limit, default 4 as GE's; ge/partition.py). A number larger than the
    # graph keeps every node host-driven
    static_model_ops_lower_limit: int = 4
    # runtime_v1: the feature-map segment may be re-bound to a caller's buffer between runs
    feature_base_refreshable: bool = False
    # runtime_v1: a static If / Loop / Scan body of several streams runs them side by side as activated streams
    # (GE's StreamActive, runtime_v1/stream_activation.py); off: in its plan order on the control node's stream, the
    # default since each activation is a thread wake-up (measured slower on 2 CPUs: bench/control_flow.py)
    activate_body_streams: bool = False
    # runtime_v1: batch gears (GE's ge.dynamicBatchSize, atc --dynamic_batch_size="1,2,4,8"): one static plan
    # per gear for a model whose inputs share a symbolic batch dim; a run pads up to the smallest gear >= batch
    dynamic_batch: tuple[int, ...] = ()
    # runtime_v1 batch gears: the shared feature map is cut into pieces of at most this many bytes, each its
    # own buffer (GE's DynamicBatchMemAssigner splits gear memory at kMaxSplitSizeForDynamicBatch = 400 MiB in
    # extend-size memory mode, ge.exec.staticMemoryPolicy=1/2: runtime_v1/gear_memory.py); 0 = one buffer
    gear_memory_split_bytes: int = 0
    # input shapes fixed at compile (GE's input_shape, atc --input_shape="data:1,3,224,224;mask:1,128"):
    # ((input name, (dims...)), ...); a symbolic dim becomes the given size everywhere it appears; -1 leaves
    # the model's symbolic dim dynamic
    input_shape: tuple = ()
    # runtime_v1: gears over any dims (GE's ge.dynamicDims, atc --dynamic_dims="1,32;1,64"): each entry the
    # sizes of input_shape's -1 dims, in order; one static plan per entry, a run takes the gear its feeds'
    # shapes match exactly (no padding); ((sizes...), ...), at most 100
    dynamic_dims: tuple = ()
    # precision (GE's ge.exec.precision_mode / atc --precision_mode; passes/precision_mode.py): which ops store
    # float32 results in float16/bfloat16. Default must_keep_origin_dtype: the only mode that never changes
    # results (on this CPU 16-bit storage saves memory, not compute: kernels compute in float32)
    precision_mode: str = "must_keep_origin_dtype"
    # GE's modify_mixlist: {"white-list"|"black-list"|"gray-list": {"to-add"|"to-remove": [op types]}} or
    # the path of that JSON file; kept as ((list, action, op type), ...)
    modify_mixlist: tuple = ()
    # node names or op types ("OpName:x" / "OpType:y" as GE's keep_dtype file) kept in their origin dtype
    keep_dtype: tuple[str, ...] = ()
    # scale-out (ge/hccl, ge/parallel): the devices of the group and this session's; -1 = the MPI rank under
    # mpiexec, else 0 (GE's ge.exec.deviceId). Under mpiexec the group is the MPI world (one device a rank);
    # otherwise the process holds device_count devices joined by shared memory
    device_id: int = -1
    device_count: int = 1
    # how a model is split over the group: "" (each device runs it whole), "data" (each runs a slice of the
    # batch, outputs gathered by HcomAllGather: ge/parallel/data.py), "tensor" (transformer blocks split
    # Megatron-style, partial sums HcomAllReduce'd: ge/parallel/tensor.py)
    parallel: str = ""
    # seconds a collective waits for its peers before an ExecutionError names the ones missing
    # (HCCL's HCCL_EXEC_TIMEOUT)
    hccl_timeout: float = 60.0
    # GE's AllReduce-parallel pass (ge.hcomParallel): an AllReduce's data successors move to a stream of
    # their own, so compute that does not need it runs on meanwhile (ge/schedule/stream_allocator.py, Step 2c)
    hcom_parallel: bool = False
    # the Python API draws its progress on stderr (a bar on a terminal, plain lines when piped) while a
    # Session compiles and runs the first time, as `ge run` does (also the environment's GE_PROGRESS=1);
    # records go to the logger "ge" either way (ge/progress_bar.py)
    progress: bool = field(default=False, compare=False)   # how it is told, not what is compiled
    # worker processes compiling a cold plan's kernels beside this one into the disk cache
    # (ge/npu/compile_workers.py): -1 = the environment's GE_COMPILE_WORKERS, else usable CPUs - 1; 0 = off
    compile_workers: int = field(default=-1, compare=False)   # how the kernels compile, not what

    def __init__(self, **kw):
        fields = {f.name: f for f in dataclasses.fields(self)}
        for name in kw:
            if name not in fields:
                raise _unknown(name, fields)
        for name, f in fields.items():
            value = kw[name] if name in kw else (f.default_factory() if f.default is dataclasses.MISSING
                                                  else f.default)
            object.__setattr__(self, name, value)
        self.__post_init__()

    def __post_init__(self):
        for name, (lo, hi) in RANGES.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not lo <= v <= hi:
                raise GEError(f"option {name} must be an integer in {lo}..{hi}, got {v!r:.40}")
            object.__setattr__(self, name, int(v))
        if 0 < self.max_tasks_per_stream <= 27:
            raise GEError(f"option max_tasks_per_stream must be 0 (no cap) or more than GE's 27 reserved tasks "
                          f"per stream, got {self.max_tasks_per_stream}")
        for name in FLAGS:
            if not isinstance(getattr(self, name), (bool, numbers.Integral)):
                raise GEError(f"option {name} must be true or false, got {getattr(self, name)!r:.40}")
            object.__setattr__(self, name, bool(getattr(self, name)))
        for name in ("disabled_passes", "dump_after", "no_reuse_ops", "fixed_address_ops"):
            v = getattr(self, name)
            items = v.split(",") if isinstance(v, str) else v
            if not isinstance(items, Iterable) or not all(isinstance(s, str) for s in items):
                raise GEError(f"option {name} must be names (a list of strings or 'a,b'), got {v!r:.40}")
        if self.kv_cache_static and not self.kv_cache_max_len:
            raise GEError("option kv_cache_static needs kv_cache_max_len (the cache's rows the step is padded to)")
        if self.parallel not in PARALLEL:
            raise GEError(f"option parallel must be one of {', '.join(map(repr, PARALLEL))}, got {self.parallel!r:.40}")
        if isinstance(self.hccl_timeout, bool) or not isinstance(self.hccl_timeout, numbers.Real) \
                or not 0 < self.hccl_timeout <= 86400:
            raise GEError(f"option hccl_timeout must be seconds in (0, 86400], got {self.hccl_timeout!r:.40}")
        object.__setattr__(self, "hccl_timeout", float(self.hccl_timeout))
        if not isinstance(self.memory_assigner, str):
            raise GEError(f"option memory_assigner must be a name, got {self.memory_assigner!r:.40}")
        mode = str(self.topo_sorting_mode).lower()
        # GE's TopoSortingMode numbers (compute_graph.h): 0 BFS, 1 DFS, 2 RDFS, 3 StableRDFS
        mode = {"0": "bfs", "1": "dfs", "2": "rdfs", "3": "stable_rdfs", "stablerdfs": "stable_rdfs",
                "memorypriority": "memory_priority"}.get(
            mode, mode)
        if mode not in TOPO_MODES:
            raise GEError(f"topo_sorting_mode '{self.topo_sorting_mode}' is not one of {TOPO_MODES}")
        object.__setattr__(self, "topo_sorting_mode", mode)
        object.__setattr__(self, "disabled_passes", tuple(self.disabled_passes))
        object.__setattr__(self, "dump_after", tuple(self.dump_after))
        _precision(self)
        for name in ("no_reuse_ops", "fixed_address_ops"):
            v = getattr(self, name)
            object.__setattr__(self, name, tuple(
                s.strip() for s in (v.split(",") if isinstance(v, str) else v) if str(s).strip()))
        object.__setattr__(self, "dynamic_batch", _gears(self.dynamic_batch))
        object.__setattr__(self, "input_shape", input_shapes(self.input_shape))
        object.__setattr__(self, "dynamic_dims", _dims_gears(self.dynamic_dims))
        check_dynamic_dims(self.input_shape, self.dynamic_dims, self.dynamic_batch)
        for name in ("stream_labels", "parallel_groups", "attached_streams", "state_pairs"):
            object.__setattr__(self, name, node_names_to(getattr(self, name), name))
        if self.sync_kind not in SYNC_KINDS:
            raise GEError(f"option sync_kind (GE: EVENT) must be one of {', '.join(SYNC_KINDS)}, got "
                          f"{self.sync_kind!r:.40}")
        if self.stream_parallel_mode not in STREAM_MODES:
            raise GEError(f"option stream_parallel_mode (GE: ge.autoMultistreamParallelMode) must be one of "
                          f"{', '.join(STREAM_MODES)}, got {self.stream_parallel_mode!r:.40}")
        object.__setattr__(self, "stream_max_parallel_num", engine_caps(self.stream_max_parallel_num))

    @classmethod
    def from_dict(cls, d: dict) -> "Options":
        """Options from a dict of ge field names and/or GE option names ("ge.exec.disableReuseMemory": "1")."""
        if not isinstance(d, Mapping):
            raise GEError(f"options must be a dict of option name -> value, got {type(d).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        if _flag(d.get("ge.enableSingleStream", "")) and str(d.get("ge.autoMultistreamParallelMode", "")).strip():
            raise GEError("ge.enableSingleStream with ge.autoMultistreamParallelMode: GE's SingleStreamPass "
                          "refuses the two together (E10056); drop one")
        kw, policy = {}, None
        for key, value in d.items():
            if key in GE_REFUSED:
                raise GEError(f"GE option {key}={value!r:.40} is not supported by ge: {GE_REFUSED[key]}")
            if key in MEMORY_POLICY:
                policy = _memory_policy(value)
                continue
            if key in GE_ALIASES:
                try:
                    pair = GE_ALIASES[key](value)
                except (TypeError, ValueError):
                    raise GEError(f"option {key}: {value!r:.40} is not a value it takes") from None
                if pair is None:   # GE's default value: nothing to change
                    continue
                key, value = pair
            if key not in names:
                raise _unknown(key, names | set(GE_ALIASES) | set(GE_REFUSED) | set(MEMORY_POLICY))
            kw[key] = value
        if policy:
            kw["topo_sorting_mode"] = _with_memory_priority(kw.get("topo_sorting_mode", "dfs"))
        return cls(**kw)

    def replace(self, **changes) -> "Options":
        return dataclasses.replace(self, **changes)


MODES = ("must_keep_origin_dtype", "force_fp32", "cube_fp16in_fp32out", "force_fp16", "allow_fp32_to_fp16",
         "allow_mix_precision", "allow_mix_precision_fp16", "allow_mix_precision_bf16")
LISTS = ("white-list", "black-list", "gray-list")   # GE's modify_mixlist lists and their actions
ACTIONS = ("to-add", "to-remove")
PRECISION_V2 = {"origin": "must_keep_origin_dtype", "fp16": "force_fp16",
                "cube_fp16in_fp32out": "cube_fp16in_fp32out", "mixed_float16": "allow_mix_precision_fp16",
                "mixed_bfloat16": "allow_mix_precision_bf16"}   # GE's ge.exec.precision_mode_v2 names


def _precision(o: "Options") -> None:
    """Check and normalise precision_mode, modify_mixlist and keep_dtype (GEError listing the valid ones)."""
    mode = str(o.precision_mode).strip()
    if mode not in MODES:
        raise GEError(f"precision_mode '{o.precision_mode}' is not one of {', '.join(MODES)}")
    mix = o.modify_mixlist
    if isinstance(mix, str):
        import json
        try:
            with open(mix) as f:
                mix = json.load(f)
        except (OSError, ValueError) as e:
            raise GEError(f"modify_mixlist: cannot read the JSON file '{mix}': {e}") from None
    if isinstance(mix, dict):
        triples = []
        for lst, actions in mix.items():
            if lst not in LISTS or not isinstance(actions, dict):
                raise GEError(f"modify_mixlist: '{lst}' is not one of {', '.join(LISTS)} (each a dict of "
                              f"{' / '.join(ACTIONS)} lists)")
            for action, ops in actions.items():
                if action not in ACTIONS or not isinstance(ops, (list, tuple)):
                    raise GEError(f"modify_mixlist: {lst} '{action}' is not one of {', '.join(ACTIONS)} "
                                  "(a list of op types)")
                triples += [(lst, action, op) for op in ops]
        mix = tuple(triples)
    mix = tuple(tuple(t) if isinstance(t, list) else t for t in mix)
    for t in mix:   # (the op types are checked against the registry by the pass)
        if not (isinstance(t, tuple) and len(t) == 3 and t[0] in LISTS and t[1] in ACTIONS
                and isinstance(t[2], str)):
            raise GEError(f"modify_mixlist entry {t!r:.60} is not (list, action, op type)")
    if mix and not mode.startswith("allow_mix_precision"):
        raise GEError(f"modify_mixlist applies to the allow_mix_precision modes, not '{mode}'")
    keep = o.keep_dtype
    if isinstance(keep, str) and os.path.isfile(keep):   # GE's keep_dtype file: one OpName:/OpType: a line
        with open(keep) as f:
            keep = f.read()
    if not isinstance(keep, (str, Iterable)) or not all(isinstance(k, str) for k in
                                                        ([keep] if isinstance(keep, str) else keep)):
        raise GEError(f"option keep_dtype must be node names or op types, got {keep!r:.40}")
    keep = tuple(s.strip() for s in (keep.replace("\n", ",").split(",") if isinstance(keep, str) else keep)
                 if str(s).strip())
    object.__setattr__(o, "precision_mode", mode)
    object.__setattr__(o, "modify_mixlist", mix)
    object.__setattr__(o, "keep_dtype", keep)


GE_ALIASES = {
    "ge.dynamicBatchSize": lambda v: ("dynamic_batch", v),
    "dynamic_batch_size": lambda v: ("dynamic_batch", v),
    "ge.dynamicDims": lambda v: ("dynamic_dims", v),
    "dynamic_dims": lambda v: ("dynamic_dims", v),
    "ge.inputShape": lambda v: ("input_shape", v),
    "ge.featureBaseRefreshable": lambda v: ("feature_base_refreshable", _flag(v)),
    "ge.exec.static_model_ops_lower_limit": lambda v: ("static_model_ops_lower_limit", int(str(v).strip())),
    "ge.exec.disableReuseMemory": lambda v: ("disable_reuse_memory", _flag(v)),
    "ge.exec.atomicCleanPolicy": lambda v: ("atomic_clean_policy", int(str(v).strip())),
    "ge.topoSortingMode": lambda v: ("topo_sorting_mode", str(v)),
    "ge.enableSingleStream": lambda v: ("enable_single_stream", _flag(v)),
    "ge.enableDynamicShapeMultiStream": lambda v: ("enable_dynamic_shape_multi_stream", _flag(v)),
    "ge.streamMaxParallelNum": lambda v: ("stream_max_parallel_num", str(v)),
    "ge.autoMultistreamParallelMode": _auto_mode,
    "ge.aicoreNum": lambda v: ("aicore_num", int(v)),
    "ge.exec.precision_mode": lambda v: ("precision_mode", str(v)),
    "precision_mode": lambda v: ("precision_mode", str(v)),
    "ge.exec.precision_mode_v2": lambda v: ("precision_mode", PRECISION_V2.get(str(v).strip(), str(v))),
    "ge.exec.modify_mixlist": lambda v: ("modify_mixlist", v),
    "modify_mixlist": lambda v: ("modify_mixlist", v),
    "keep_dtype": lambda v: ("keep_dtype", v),
    "aicore_num": lambda v: ("aicore_num", int(v)),
    "ge.exec.deviceId": lambda v: ("device_id", int(v)),
    "HCCL_EXEC_TIMEOUT": lambda v: ("hccl_timeout", float(v)),
    "ge.hcomParallel": lambda v: ("hcom_parallel", _flag(v)),
    "HCOM_PARALLEL": lambda v: ("hcom_parallel", _flag(v)),
    "ac_parallel_enable": _ac_parallel,
    "ge.exec.staticMemoryPolicy": _static_memory_policy,
    "EVENT": _sync_kind,
    "AC_PARALLEL_ENABLE": _ac_parallel,
}

# GE options ge knows of and does not do, with the reason (docs/ge-reference.md §5); from_dict refuses them by name
GE_REFUSED = {
    "ge.exec.inputReuseMemIndexes": "graph inputs are never scratch memory in ge's plan (their io blocks "
                                    "are the caller's buffers, bound zero copy)",
    "ge.exec.outputReuseMemIndexes": "graph outputs are never pre-reused: each has its own io block",
    "ge.exec.outputReuseInputMemIndexes": "ge declares no I/O aliasing; an output aliasing an input is copied",
    "ge.exec.reuseZeroCopyMemory": "ge keeps no zero-copy region across runs: the caller's buffers are bound "
                                   "per run",
    "ge.exec.input_fusion_size": "ge has no host-to-device copy to merge (inputs are host arrays)",
    "ge.exec.graphIOMemAllocMode": "graph I/O is always the caller's memory (or a fresh array) in ge",
    "ge.exec.frozenInputIndexes": "ge refreshes every input slot per run; there is nothing to freeze",
    "ge.experiment.memory_pool_threshold": "runtime_v2's cache is bounded by device_memory_bytes",
}


def as_options(options) -> Options:
    if options is None:
        return Options()
    if isinstance(options, Options):
        return options
    if isinstance(options, dict):
        return Options.from_dict(options)
    raise GEError(f"options must be ge.Options or a dict, not {type(options).__name__}")

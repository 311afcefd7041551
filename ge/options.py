"""Options: one typed dataclass; GE's option names are accepted as aliases (Options.from_dict)."""
from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable
from dataclasses import dataclass, field

from .errors import GEError

TOPO_MODES = ("bfs", "dfs", "rdfs", "memory_priority")


@dataclass(frozen=True)
class Options:
    # compile
    disabled_passes: tuple[str, ...] = ()
    dump_after: tuple[str, ...] = ()
    verify_passes: bool = False
    topo_sorting_mode: str = "dfs"
    # memory
    disable_reuse_memory: bool = False
    memory_assigner: str = "hybrid"   # hybrid (smallest of all), or one name of ge.memory.hybrid.ASSIGNERS
    inplace_memory: bool = False      # an output may overwrite a declared in-place input at its last read
    concat_in_place: bool = True      # producers write into their slices of a Concat's output, no copy
    # node names or op types whose outputs and workspaces get their own feature-map block, shared with nothing
    # (also GE's env OP_NO_REUSE_MEM="name_or_type,...", at most 10 entries; both lists apply)
    no_reuse_ops: tuple[str, ...] = ()
    # streams
    enable_single_stream: bool = False
    max_streams: int = 8
    exact_ge_streams: bool = False    # GE's stream rules without ge's two refinements (for comparison)
    # threads that compute at once for a run: stream threads and AI cores share it; 0 = the CPUs of this process
    thread_budget: int = 0
    # AI cores the kernels are tiled for (GE's ge.aicoreNum / atc --aicore_num): a launch runs on at most this
    # many cores; 0 = the thread budget. Resolved when the plan is compiled (ge.npu.aicore.aicore_num)
    aicore_num: int = 0
    # runtime_v2: modelled device memory (planned arenas + caching allocator), concurrent instances
    device_memory_bytes: int = 4 << 30
    executor_instances: int = 8
    # runtime_v1: the feature-map segment may be re-bound to a caller's buffer between runs
    feature_base_refreshable: bool = False
    # runtime_v1: batch gears (GE's ge.dynamicBatchSize, atc --dynamic_batch_size="1,2,4,8"): one static plan
    # per gear for a model whose inputs share a symbolic batch dim; a run pads up to the smallest gear >= batch
    dynamic_batch: tuple[int, ...] = ()
    extra: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        mode = str(self.topo_sorting_mode).lower()
        mode = {"0": "bfs", "1": "dfs", "2": "rdfs", "3": "rdfs", "memorypriority": "memory_priority"}.get(
            mode, mode)
        if mode not in TOPO_MODES:
            raise GEError(f"topo_sorting_mode '{self.topo_sorting_mode}' is not one of {TOPO_MODES}")
        object.__setattr__(self, "topo_sorting_mode", mode)
        object.__setattr__(self, "disabled_passes", tuple(self.disabled_passes))
        object.__setattr__(self, "dump_after", tuple(self.dump_after))
        nro = self.no_reuse_ops
        object.__setattr__(self, "no_reuse_ops", tuple(
            s.strip() for s in (nro.split(",") if isinstance(nro, str) else nro) if str(s).strip()))
        object.__setattr__(self, "dynamic_batch", _gears(self.dynamic_batch))
        if self.max_streams < 1:
            raise GEError(f"max_streams must be >= 1, got {self.max_streams}")
        if self.thread_budget < 0 or self.aicore_num < 0:
            raise GEError(f"thread_budget ({self.thread_budget}) and aicore_num ({self.aicore_num}) must be >= 0 "
                          "(0: the CPUs this process may use)")
        if self.device_memory_bytes <= 0 or self.executor_instances < 1:
            raise GEError(f"device_memory_bytes ({self.device_memory_bytes}) and executor_instances "
                          f"({self.executor_instances}) must be positive")

    @classmethod
    def from_dict(cls, d: dict) -> "Options":
        """Options from a dict of ge field names and/or GE option names ("ge.exec.disableReuseMemory": "1")."""
        names = {f.name for f in dataclasses.fields(cls)}
        kw, extra = {}, {}
        for key, value in d.items():
            if key in GE_ALIASES:
                key, value = GE_ALIASES[key](value)
            if key in names:
                kw[key] = value
            else:
                extra[key] = value
        return cls(**kw, extra=extra)

    def replace(self, **changes) -> "Options":
        return dataclasses.replace(self, **changes)


def _flag(v) -> bool:
    return str(v).strip().lower() in ("1", "true", "yes", "on")


MAX_GEARS = 100  # GE's limit on dynamic batch gears


def _gears(value) -> tuple[int, ...]:
    """Batch gears from "1,2,4,8", [1, 2, 4, 8] or 8: positive ints, sorted; a repeated gear is an error."""
    if isinstance(value, str):
        items = value.split(",")
    else:
        items = [value] if isinstance(value, numbers.Integral) or not isinstance(value, Iterable) else value
    gears = []
    for item in items:
        text = str(item).strip()
        if isinstance(item, str) and not text:
            continue  # "1,2,4," from a shell script
        if isinstance(item, bool) or not text.isdigit() or int(text) < 1:
            raise GEError(f"dynamic_batch gears must be positive integers, got {item!r} in {value!r}")
        gears.append(int(text))
    if len(set(gears)) != len(gears):
        raise GEError(f"dynamic_batch gears must not repeat, got {value!r}")
    if len(gears) > MAX_GEARS:
        raise GEError(f"dynamic_batch allows at most {MAX_GEARS} gears, got {len(gears)}")
    return tuple(sorted(gears))


GE_ALIASES = {
    "ge.dynamicBatchSize": lambda v: ("dynamic_batch", v),
    "dynamic_batch_size": lambda v: ("dynamic_batch", v),
    "ge.featureBaseRefreshable": lambda v: ("feature_base_refreshable", _flag(v)),
    "ge.exec.disableReuseMemory": lambda v: ("disable_reuse_memory", _flag(v)),
    "ge.topoSortingMode": lambda v: ("topo_sorting_mode", str(v)),
    "ge.enableSingleStream": lambda v: ("enable_single_stream", _flag(v)),
    "ge.aicoreNum": lambda v: ("aicore_num", int(v)),
    "aicore_num": lambda v: ("aicore_num", int(v)),
    "ge.exec.memoryOptimizationPolicy": lambda v: (
        ("topo_sorting_mode", "memory_priority") if str(v) == "MemoryPriority" else ("extra_policy", v)),
}


def as_options(options) -> Options:
    if options is None:
        return Options()
    if isinstance(options, Options):
        return options
    if isinstance(options, dict):
        return Options.from_dict(options)
    raise GEError(f"options must be ge.Options or a dict, not {type(options).__name__}")

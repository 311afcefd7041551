"""GE option values parsed into Options fields: flags, stream caps and modes, gears, node lists, input shapes.

Each parser takes what a user or a GE-style dict gives and returns the field's typed value, or raises a
GEError naming the option and what was wrong.
"""
from __future__ import annotations

import numbers
from collections.abc import Iterable

from .errors import GEError

MAX_STREAMS = 1 << 16   # = options.RANGES["max_streams"]'s top

def _flag(v) -> bool:
    return str(v).strip().lower() in ("1", "true", "yes", "on")


MEMORY_POLICY = ("ge.exec.memoryOptimizationPolicy",)


def _memory_policy(v) -> bool:
    """GE's MEMORY_OPTIMIZATION_POLICY takes "MemoryPriority" or nothing (the default)."""
    text = str(v).strip()
    if text not in ("", "MemoryPriority"):
        raise GEError(f"option ge.exec.memoryOptimizationPolicy takes 'MemoryPriority' (or '' for GE's "
                      f"default), got {v!r:.40}")
    return text == "MemoryPriority"


def _with_memory_priority(mode) -> str:
    """GE combines the policy with the sort mode: under BFS and DFS the ready set becomes the NodeOutInfo map
    (one walk for both: ge's memory_priority); RDFS and StableRDFS ignore it in GE's walk, and ge has no such
    combination of its own, so it says so instead of dropping one of the two."""
    m = str(mode).strip().lower()
    if m in ("0", "1", "bfs", "dfs", "memory_priority", "memorypriority"):
        return "memory_priority"
    raise GEError(f"ge.exec.memoryOptimizationPolicy=MemoryPriority with topo_sorting_mode {mode!r}: ge runs "
                  "memory priority as its own order (GE's BFS/DFS walk keyed by NodeOutInfo); give "
                  "topoSortingMode 0 or 1 with it, or drop the policy for RDFS/StableRDFS")


def _ac_parallel(v):
    """GE's AC_PARALLEL_ENABLE (AICPU in parallel with AICore on dynamic-shape graphs): "" and "0" are GE's
    default and what ge does; "1" is refused (the reason is in the error)."""
    text = str(v).strip()
    if text in ("", "0"):
        return None
    if text == "1":
        raise GEError("GE option ac_parallel_enable=1 is not supported by ge: it gives AICPU nodes of a "
                      "dynamic-shape graph their own stream (GE's AssignAicpuCanParallel), which ge's stream "
                      "assignment does not do; a dynamic graph gets ge's own streams with "
                      "enable_dynamic_shape_multi_stream (GE: ENABLE_DYNAMIC_SHAPE_MULTI_STREAM), and static "
                      "plans follow GE's static stream rules, where the option has no effect in GE")
    raise GEError(f"option ac_parallel_enable takes '', '0' or '1', got {v!r:.40}")


# GE's kMaxSplitSizeForDynamicBatch (compiler/graph/build/memory/dynamic_batch_mem_assigner.h)
GEAR_SPLIT_BYTES = 400 << 20


def _static_memory_policy(v):
    """GE's ge.exec.staticMemoryPolicy. "" / "0": GE's default, one block per gear. "1" / "2" turn on GE's
    extend-size memory for static graphs (VarManager::IsGeUseExtendSizeMemory), whose one effect ge models is
    the dynamic-batch split of gear memory at 400 MiB (docs/ge-reference.md §2.10). "3" / "4" expand dynamic-shape
    memory, which runtime_v2's caching allocator does on its own: refused with that reason."""
    text = str(v).strip()
    if text in ("", "0"):
        return None
    if text in ("1", "2"):
        return "gear_memory_split_bytes", GEAR_SPLIT_BYTES
    if text in ("3", "4"):
        raise GEError(f"GE option ge.exec.staticMemoryPolicy={text} is not supported by ge: it makes "
                      "dynamic-shape memory expandable, and runtime_v2's caching allocator grows on its own "
                      "(runtime_v1's arena is static; '2' splits batch-gear memory at 400 MiB)")
    raise GEError(f"option ge.exec.staticMemoryPolicy takes '', '0', '1', '2', '3' or '4', got {v!r:.40}")


SYNC_KINDS = ("event", "notify")


def _sync_kind(v):
    """GE's option EVENT (stream_allocator.cc InsertSyncNodesByLogicStream): "notify" syncs with Notify,
    anything else GE reads as events; ge names the two and refuses other text rather than guess."""
    text = str(v).strip().lower()
    if text in ("", "event"):
        return None
    if text == "notify":
        return "sync_kind", "notify"
    raise GEError(f"option EVENT takes 'event' or 'notify', got {v!r:.40}")


STREAM_MODES = ("auto", "engine")
# GE's engine names (engine_conf.json) -> ge's engines; VectorEngine and DSAEngine run no ge op (ge's
# elementwise ops are AICORE's), so their caps are accepted and bind nothing
GE_ENGINE_NAMES = {"AIcoreEngine": "AICORE", "VectorEngine": "VectorEngine", "DSAEngine": "DSAEngine",
                   "DNN_VM_AICPU": "AICPU", "DNN_VM_AICPU_ASCEND": "AICPU", "DNN_VM_DVPP": "DVPP",
                   "DNN_HCCL": "HCCL", "DNN_VM_GE_LOCAL": "GE_LOCAL"}
_GE_ENGINES = ("AICORE", "AICPU", "DVPP", "HCCL", "GE_LOCAL")   # = ge.npu.engines.ENGINES (a room above: not imported)


def engine_caps(value) -> tuple:
    """ge.streamMaxParallelNum ("AIcoreEngine:4,VectorEngine:2", {engine: n} or pairs) -> ((engine, n), ...)
    in ge's engine names, sorted; each n a positive integer, each engine named once."""
    key = "option stream_max_parallel_num (ge.streamMaxParallelNum)"
    if isinstance(value, str):
        items = []
        for part in (p.strip() for p in value.split(",")):
            if part:
                name, sep, n = part.rpartition(":")
                if not sep or not name.strip():
                    raise GEError(f"{key}: '{part}' is not EngineName:N (e.g. 'AIcoreEngine:4,VectorEngine:2')")
                items.append((name.strip(), n.strip()))
    elif isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, Iterable) and all(isinstance(p, (tuple, list)) and len(p) == 2 for p in value):
        items = list(value)
    else:
        raise GEError(f"{key} must be 'EngineName:N,...', {{engine: N}} or pairs, got {value!r:.40}")
    caps = {}
    for name, n in items:
        engine = GE_ENGINE_NAMES.get(name, name)
        if engine not in _GE_ENGINES and engine not in GE_ENGINE_NAMES.values():
            raise GEError(f"{key}: unknown engine {name!r:.40}; GE's names: {', '.join(GE_ENGINE_NAMES)} "
                          f"(or ge's: {', '.join(_GE_ENGINES)})")
        try:
            count = int(str(n).strip()) if not isinstance(n, bool) else None
        except ValueError:
            count = None
        if count is None or not 1 <= count <= MAX_STREAMS:
            raise GEError(f"{key}: {name} takes a positive number of streams, got {n!r:.40}")
        if engine in caps:
            raise GEError(f"{key} names engine {name} twice")
        caps[engine] = count
    return tuple(sorted(caps.items()))


def _auto_mode(v):
    """GE's ge.autoMultistreamParallelMode: "" is GE's default chain (ge's "engine" mode); "auto" is ge's
    sibling-parallel assignment; GE's own auto passes (cv, LoadBalance:N, MainStream:N) are refused."""
    text = str(v).strip()
    if text in ("", "auto"):
        return "stream_parallel_mode", text or "engine"
    head, _, n = text.partition(":")
    if text == "cv" or (head in ("LoadBalance", "MainStream") and n.isdigit() and 1 <= int(n) <= 64):
        raise GEError(f"GE option ge.autoMultistreamParallelMode={text!r:.40} is not supported by ge: ge has one "
                      "auto mode, 'auto' (sibling branches on streams of their own up to max_streams), not GE's "
                      "experimental DAG passes (cv, LoadBalance:N, MainStream:N)")
    raise GEError(f"option ge.autoMultistreamParallelMode takes '' (GE's default chain) or 'auto' (ge's "
                  f"sibling-parallel assignment), got {v!r:.40}")


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


def _dims_gears(value) -> tuple[tuple[int, ...], ...]:
    """Dims gears (GE's ge.dynamicDims, atc --dynamic_dims="1,32;1,64") from "a,b;c,d" or [[a, b], ...]:
    each entry the sizes of input_shape's -1 dims, in order; positive ints. GE does not require the entries
    sorted (the order is kept); a repeated entry, or more than MAX_GEARS, is an error naming it."""
    if isinstance(value, str):
        entries = [e for e in value.replace(" ", "").split(";") if e]
    elif isinstance(value, Iterable):
        entries = list(value)
    else:
        raise GEError(f"option dynamic_dims must be 'd0,d1;d0,d1;...' or a list of size lists, got {value!r:.40}")
    out = []
    for k, entry in enumerate(entries):
        items = entry.split(",") if isinstance(entry, str) else \
            [entry] if isinstance(entry, numbers.Integral) or not isinstance(entry, Iterable) else list(entry)
        sizes = []
        for item in items:
            text = str(item).strip()
            if isinstance(item, bool) or not text.isdigit() or int(text) < 1:
                raise GEError(f"option dynamic_dims: entry {k} ({entry!r:.40}) must be positive integers")
            sizes.append(int(text))
        if not sizes:
            raise GEError(f"option dynamic_dims: entry {k} is empty")
        if tuple(sizes) in out:
            raise GEError(f"option dynamic_dims: entry {k} {','.join(map(str, sizes))} repeats entry "
                          f"{out.index(tuple(sizes))}")
        out.append(tuple(sizes))
    if len(out) > MAX_GEARS:
        raise GEError(f"option dynamic_dims allows at most {MAX_GEARS} gears, got {len(out)}")
    return tuple(out)


def check_dynamic_dims(input_shape: tuple, dims: tuple, batch: tuple) -> None:
    """dynamic_dims against input_shape: every entry gives one size per -1 of input_shape (GE's rule)."""
    if not dims:
        return
    if batch:
        raise GEError("option dynamic_dims with dynamic_batch: give one kind of gears (GE refuses both too)")
    holes = [f"{name}[{axis}]" for name, shape in input_shape for axis, d in enumerate(shape) if d == -1]
    if not holes:
        raise GEError("option dynamic_dims needs input_shape with a -1 for each dim that varies (e.g. "
                      "input_shape='input_ids:1,-1', dynamic_dims='32;64')")
    for k, entry in enumerate(dims):
        if len(entry) != len(holes):
            raise GEError(f"option dynamic_dims: entry {k} {','.join(map(str, entry))} gives {len(entry)} "
                          f"sizes; input_shape has {len(holes)} dims of -1 ({', '.join(holes)})")


def _pairs(value, item, must: str) -> list:
    """A list of pairs from "a:x;b:y" (each non-empty item through `item`), a dict or an iterable of pairs."""
    if isinstance(value, str):
        return [item(t) for t in value.split(";") if t.strip()]
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, Iterable):
        return list(value)
    raise GEError(f"{must}, got {value!r:.40}")


def node_names_to(value, option: str) -> tuple:
    """((name, text), ...) from {name: text}, "name:text;name2:text2" or pairs; a name appears once."""
    def item(text):
        name, sep, val = text.rpartition(":")
        if not sep or not name.strip() or not val.strip():
            raise GEError(f"option {option}: '{text}' is not node_name:value")
        return name.strip(), val.strip()
    pairs = _pairs(value, item, f"option {option} must be {{node name: value}} or 'name:value;...'")
    seen = set()
    for pair in pairs:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(x, str) and x
                                                                           for x in pair)):
            raise GEError(f"option {option}: {pair!r:.40} is not (node name, value)")
        if pair[0] in seen:
            raise GEError(f"option {option} names node '{pair[0]}' twice")
        seen.add(pair[0])
    return tuple((a, b) for a, b in pairs)


def input_shapes(value) -> tuple:
    """((name, (dims...)), ...) from "data:1,3,224,224;mask:1,128" (atc), a dict {name: dims} or pairs.
    Sizes are positive integers, or -1 for a dim left dynamic (GE's input_shape; dynamic_dims then gives
    its gears); a name appears once."""
    def item(text):
        name, sep, dims = text.rpartition(":")
        if not sep or not name:
            raise GEError(f"input_shape '{text}' is not name:d0,d1,... (e.g. data:1,3,224,224)")
        return name, dims.split(",") if dims else []
    pairs = _pairs(value.replace(" ", "") if isinstance(value, str) else value, item,
                   "option input_shape must be 'name:d0,d1;...' or {name: dims}")
    out, seen = [], set()
    for pair in pairs:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], str)):
            raise GEError(f"option input_shape: {pair!r:.40} is not (name, dims)")
        name, dims = pair
        if name in seen:
            raise GEError(f"input_shape names input '{name}' twice")
        seen.add(name)
        shape = []
        if isinstance(dims, str):
            dims = dims.split(",") if dims else []
        for d in [dims] if isinstance(dims, numbers.Integral) else dims:
            text = str(d).strip()
            if text == "-1" and not isinstance(d, bool):
                shape.append(-1)
                continue
            if isinstance(d, bool) or not text.isdigit() or int(text) < 1:
                raise GEError(f"input_shape of '{name}': sizes must be positive integers (or -1: dynamic), "
                              f"got {dims!r:.40}")
            shape.append(int(text))
        out.append((name, tuple(shape)))
    return tuple(out)

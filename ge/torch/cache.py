"""The compile cache across processes (`CompilerConfig(cache_dir=...)`, TorchAir's cache_compile idea): a graph
compiled once is loaded by the next process without conversion or ge's compile.

An entry is a folder `<cache_dir>/<key>/`: `plan.gem` (ge.save / ge.offline.save_gears: the plan or the gears,
weights included; verified at load like any offline model) and `meta.json` (what runtime.py needs besides
the plan: per gear, which inputs feed which plan inputs, where each result comes from, the outputs' specs).

Step 1, the key: sha256 over ge's and torch's versions, the CPUs this process may use, the config (mode,
        aicore_num, options...), the FX graph's structure (every node's op, target, arguments, traced
        dtype/shape and stream scope), the inputs' dtypes and shapes, the gears, and the bytes of every frozen tensor (they
        are the plan's constants: other weights must not load this plan).
Step 2, a look-up: meta.json is read bounded (META_CAP) and must carry its own digest (an edit is refused,
        as plan.json's in a .gem), this key, this format and a sha256 of plan.gem that the file matches; its fields are checked by type and against the plan (feed names are
        plan inputs, each output spec is the plan's, the gears are those compiled now). A missing entry is
        compiled and written; a damaged or foreign one is refused with one warning (logger "ge.torch"),
        compiled again and overwritten.
Step 3, a write: into a temporary folder beside the entry, then renamed over it, so a reader never sees half
        an entry. Graphs returning a constant ge folded are not cached (their value is not in the plan).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from .. import __version__ as GE_VERSION
from ..errors import GEError
from ..offline import load as load_offline
from ..offline import save as save_plan
from ..offline import save_gears
from ..plan import GearPlans
from .convert import Converted, Output, tensor_view
from .registry import DTYPES, op_name
from .streams import stream_label

log = logging.getLogger("ge.torch")
FORMAT = "ge.torch.cache/1"
META_CAP = 1 << 20              # meta.json: a few KB per gear
KINDS = ("ge", "arg", "const", "none")
_DTYPE_NAMES = {str(d): d for d in DTYPES}


class Refused(Exception):
    """A cache entry that cannot be used (the message says why)."""


def cached_build(g, frozen: dict, args):
    """(model, {gear: Converted}, hit) for GeGraph `g`, through the cache when its config names one."""
    root = g.config.cache_dir
    if not root:
        return (*g.build(frozen, args), False)
    key = entry_key(g, frozen, args)
    entry = Path(root) / key
    if entry.exists():
        try:
            model, convs = _load(entry, key, g, args)
            log.info("ge.torch: %s loaded from the compile cache (%s)", g.name, entry)
            return model, convs, True
        except Refused as e:
            log.warning("ge.torch: compile cache entry %s refused (%s): compiling again", entry, e)
    model, convs = g.build(frozen, args)
    if all(o.kind != "const" or o.index >= 0 for c in convs.values() for o in c.outputs):
        try:
            _write(entry, key, model, convs)
        except OSError as e:
            log.warning("ge.torch: could not write the compile cache entry %s: %s", entry, e)
    return model, convs, False


# -- Step 1 ------------------------------------------------------------------------------------------------
def entry_key(g, frozen: dict, args) -> str:
    h = hashlib.sha256()
    part = lambda s: h.update(str(s).encode() + b"\0")  # noqa: E731
    part(FORMAT), part(GE_VERSION), part(torch.__version__), part(platform.machine())
    part(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    c = g.config
    part((c.mode, c.aicore_num, c.frozen_parameters, c.dynamic_gears_merge_policy, repr(c.session_options())))
    for node in g.gm.graph.nodes:
        val = node.meta.get("val")
        spec = (val.dtype, tuple(val.shape)) if isinstance(val, torch.Tensor) else type(val).__name__
        part((node.op, node.name, op_name(node.target) if node.op == "call_function" else node.target,
              _names(node.args), _names(node.kwargs), spec, stream_label(node)))
    for a in args:
        part((a.dtype, tuple(a.shape)) if isinstance(a, torch.Tensor) else repr(a))
    part((getattr(g, "geared", ()), getattr(g, "varying", ())))
    for k in sorted(frozen):
        part(k)
        h.update(memoryview(tensor_view(frozen[k], f"frozen input {k}")).cast("B"))
    return h.hexdigest()[:40]


def _names(x):
    return torch.fx.node.map_arg(x, lambda n: f"%{n.name}")


# -- Step 2 ------------------------------------------------------------------------------------------------
def _load(entry: Path, key: str, g, args):
    try:
        with open(entry / "meta.json", "rb") as f:
            text = f.read(META_CAP + 1)
    except OSError as e:
        raise Refused(f"meta.json: {e.strerror or e}") from None
    if len(text) > META_CAP:
        raise Refused(f"meta.json is larger than {META_CAP} bytes")
    try:
        meta = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise Refused(f"meta.json is not JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise Refused(f"meta.json is not a {FORMAT} document")
    if meta.get("digest") != _digest(meta):
        raise Refused("meta.json was changed after ge wrote it (its digest differs)")
    if meta.get("key") != key:
        raise Refused("it was written for another graph, config, weights or ge version (key differs)")
    has_plan = meta.get("plan_sha256")
    model = None
    if has_plan is not None:
        if _sha256(entry / "plan.gem") != has_plan:
            raise Refused("plan.gem is not the file written with meta.json (sha256 differs)")
        try:
            model = load_offline(entry / "plan.gem")
        except GEError as e:
            raise Refused(str(e)) from None
    convs = _convs(meta.get("gears"), model, g, args)
    want = g.gear_keys()
    if want is not None and sorted(convs) != sorted(want):
        raise Refused(f"its gears {sorted(convs)} are not the gears compiled now {sorted(want)}")
    return model, convs


def _digest(meta: dict) -> str:
    body = {k: v for k, v in meta.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _sha256(path: Path) -> str | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def _convs(gears, model, g, args) -> dict:
    """meta.json's gears, checked field by field and against the plan."""
    if not isinstance(gears, list) or not gears:
        raise Refused("meta.json: 'gears' is not a non-empty list")
    out = {}
    for k, item in enumerate(gears):
        where = f"meta.json gears[{k}]"
        if not isinstance(item, dict):
            raise Refused(f"{where} is not an object")
        gear = _ints(item.get("gear"), f"{where}.gear")
        feeds = [(_int(p, where, 0, len(args)), _str(n, where)) for p, n in _pairs(item.get("feeds"), where)]
        outputs = []
        for kind, index in _pairs(item.get("outputs"), where):
            if kind not in KINDS:
                raise Refused(f"{where}: output kind {kind!r:.20}")
            outputs.append(Output(kind, _int(index, where, -1, len(args))))
        specs = [(tuple(_ints(s, where)), _dtype(d, where)) for s, d in _pairs(item.get("out_specs"), where)]
        out[tuple(gear)] = _checked(Converted(None, feeds, outputs, specs), model, tuple(gear), g, where)
    return out


def _checked(conv: Converted, model, gear: tuple, g, where: str) -> Converted:
    plan = model.plans.get(gear) if isinstance(model, GearPlans) else model
    if isinstance(model, GearPlans) and plan is None:
        raise Refused(f"{where}: gear {list(gear)} is not in plan.gem")
    n_ge = sum(o.kind == "ge" for o in conv.outputs)
    if plan is None:
        if n_ge or conv.feeds:
            raise Refused(f"{where}: results computed by ge, but no plan.gem")
        return conv
    names = {plan.tensors[i].name for i in plan.inputs}
    if any(n not in names for _, n in conv.feeds) or len(conv.feeds) != len(plan.inputs):
        raise Refused(f"{where}: its feeds are not plan.gem's inputs")
    if n_ge != len(plan.outputs) or len(conv.out_specs) != n_ge:
        raise Refused(f"{where}: {n_ge} results from ge, plan.gem has {len(plan.outputs)} outputs")
    for o in conv.outputs:
        if o.kind == "ge" and not 0 <= o.index < n_ge or o.kind == "const" and o.index not in g.frozen:
            raise Refused(f"{where}: output index {o.index} for kind {o.kind}")
    for (shape, dtype), i in zip(conv.out_specs, plan.outputs):
        t = plan.tensors[i]
        if tuple(t.shape) != shape or t.dtype != tensor_dtype(dtype):
            raise Refused(f"{where}: output spec {dtype}{list(shape)} is not plan.gem's {t.dtype}{list(t.shape)}")
    return conv


def tensor_dtype(dtype: torch.dtype) -> np.dtype:
    return np.dtype(DTYPES[dtype])


def _pairs(x, where):
    if not isinstance(x, list) or not all(isinstance(p, list) and len(p) == 2 for p in x):
        raise Refused(f"{where}: a list of pairs expected")
    return x


def _ints(x, where):
    if not isinstance(x, list) or len(x) > 64 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                                         for v in x):
        raise Refused(f"{where}: a short list of sizes expected")
    return x


def _int(x, where, lo, hi):
    if not isinstance(x, int) or isinstance(x, bool) or not lo <= x < hi:
        raise Refused(f"{where}: index {x!r:.20} out of range")
    return x


def _str(x, where):
    if not isinstance(x, str) or len(x) > 1000:
        raise Refused(f"{where}: a name expected")
    return x


def _dtype(x, where):
    if x not in _DTYPE_NAMES:
        raise Refused(f"{where}: dtype {x!r:.30}")
    return _DTYPE_NAMES[x]


# -- Step 3 ------------------------------------------------------------------------------------------------
def _write(entry: Path, key: str, model, convs: dict) -> None:
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=entry.parent))
    try:
        meta = {"format": FORMAT, "key": key, "ge": GE_VERSION, "torch": torch.__version__, "plan_sha256": None,
                "gears": [{"gear": list(gear), "feeds": [list(f) for f in c.feeds],
                           "outputs": [[o.kind, o.index] for o in c.outputs],
                           "out_specs": [[list(s), str(d)] for s, d in c.out_specs]} for gear, c in convs.items()]}
        if model is not None:
            (save_gears if isinstance(model, GearPlans) else save_plan)(model, tmp / "plan.gem")
            meta["plan_sha256"] = _sha256(tmp / "plan.gem")
        meta["digest"] = _digest(meta)
        (tmp / "meta.json").write_text(json.dumps(meta))
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        os.replace(tmp, entry)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)

"""Offline models: save a compiled Plan and its weights, load it without recompiling (DESIGN.md §7).

A saved plan is two members, in a zip file (`model.gem`, stored uncompressed) or in a directory:
- `plan.json`: {"format": "ge.plan", "version": 1, name, options, tensors, inputs, outputs, constants,
  nodes (op/domain/opset/attrs/inputs/outputs/engine/stream/dynamic/alias), events, memory,
  single_stream_reason}. Attribute values are JSON; arrays, tuples, dicts and numpy scalars are tagged
  objects ({"__array__": key}, {"__tuple__": [...]}, {"__dict__": {...}}, {"__np__": dtype, "v": value}).
- `weights.npz`: constants ("c<tensor index>") and array-valued attributes ("a<n>"), written by np.savez
  and read with allow_pickle=False: no pickle anywhere.
Batch gears (`save_gears`, `ge compile --dynamic-batch`) use the same two members: `plan.json` is
{"format": "ge.gears", "version": 1, symbol, batched, inputs, outputs, plans: {gear: plan document}} and
every array is stored once under a digest of its content ("w<sha1>"), so the gears share their weights.

Loading looks each kernel up by (op_type, domain, opset) and re-runs only infer + prepare for static nodes
from the stored tensor specs and constant values; the order, streams, events and memory plan come from the
file. Only the two member names are ever opened (nothing in the file names a path).
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import mmap
import os
import struct
import tempfile
import zipfile
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from .errors import GEError, ModelLoadError
from .kernels.registry import KernelContext, TensorSpec, lookup
from .memory import MemoryPlan, MemoryStats, TensorMemory
from .options import Options
from .plan import GearPlans, Plan, PlanNode, PlanTensor
from .schedule.events import SyncEvent

FORMAT, GEARS, VERSION = "ge.plan", "ge.gears", 1
PLAN_JSON, WEIGHTS_NPZ = "plan.json", "weights.npz"


# -- encoding ---------------------------------------------------------------------------------------

class _Encoder:
    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, a: np.ndarray, where: str) -> dict:
        if a.dtype.hasobject:
            raise GEError(f"cannot save {where}: arrays of dtype {a.dtype} need pickle")
        key = f"a{len(self.arrays)}"
        self.arrays[key] = a
        return {"__array__": key}

    def value(self, v, where: str):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, (int, float)) and type(v) in (int, float):
            return v
        if isinstance(v, np.ndarray):
            return self.array(v, where)
        if isinstance(v, np.generic):
            if v.dtype.hasobject:
                raise GEError(f"cannot save {where}: value of dtype {v.dtype}")
            return {"__np__": v.dtype.str, "v": v.item()}
        if isinstance(v, list):
            return [self.value(x, where) for x in v]
        if isinstance(v, tuple):
            return {"__tuple__": [self.value(x, where) for x in v]}
        if isinstance(v, Mapping) and all(isinstance(k, str) for k in v):
            return {"__dict__": {k: self.value(x, where) for k, x in v.items()}}
        raise GEError(f"cannot save {where}: values of type {type(v).__name__} (e.g. subgraphs) are not "
                      "supported by offline models")


def _decode(v, arrays):
    if isinstance(v, list):
        return [_decode(x, arrays) for x in v]
    if isinstance(v, dict):
        if "__array__" in v:
            return arrays[v["__array__"]]
        if "__tuple__" in v:
            return tuple(_decode(x, arrays) for x in v["__tuple__"])
        if "__dict__" in v:
            return {k: _decode(x, arrays) for k, x in v["__dict__"].items()}
        if "__np__" in v:
            return np.dtype(v["__np__"]).type(v["v"])
        raise ValueError(f"unknown tagged value {sorted(v)}")
    return v


def plan_document(plan: Plan) -> tuple[dict, dict[str, np.ndarray]]:
    """(the JSON document, the arrays for weights.npz) of a plan."""
    enc = _Encoder()
    constants = {}
    for i, a in plan.constants.items():
        a = np.asarray(a)
        if a.dtype.hasobject:
            raise GEError(f"cannot save constant '{plan.tensors[i].name}': dtype {a.dtype} needs pickle")
        constants[str(i)] = key = f"c{i}"
        enc.arrays[key] = a
    opts = {}
    for f in Options.__dataclass_fields__:
        opts[f] = enc.value(getattr(plan.options, f), f"option {f}")
    nodes = [{"name": n.name, "op_type": n.op_type, "domain": n.domain, "opset": n.opset,
              "attrs": {k: enc.value(v, f"attribute '{k}' of node '{n.name}'") for k, v in n.attrs.items()},
              "inputs": list(n.inputs), "outputs": list(n.outputs), "engine": n.engine, "stream": n.stream,
              "dynamic": n.is_dynamic, "alias": n.launch is None, "no_task": n.no_task} for n in plan.nodes]
    mem = None
    if plan.memory is not None:
        m, s = plan.memory, plan.memory.stats
        fields = [f.name for f in dataclasses.fields(TensorMemory)]
        mem = {"tensor_fields": fields,
               "tensors": [[getattr(t, f) for f in fields] for t in m.tensors],
               "workspaces": [[list(w) for w in ws] for ws in m.workspaces],
               "segments": dict(m.segments),
               "stats": {f.name: enc.value(getattr(s, f.name), f"memory stat {f.name}")
                         for f in dataclasses.fields(MemoryStats)}}
    doc = {"format": FORMAT, "version": VERSION, "name": plan.name, "options": opts,
           "tensors": [[t.name, t.dtype.str, list(t.shape), t.kind] for t in plan.tensors],
           "inputs": list(plan.inputs), "outputs": list(plan.outputs), "constants": constants,
           "nodes": nodes,
           "events": [[e.id, e.record_after, e.wait_before, e.src_stream, e.dst_stream] for e in plan.events],
           "memory": mem, "single_stream_reason": plan.single_stream_reason}
    return doc, enc.arrays


def gears_document(gp: GearPlans) -> tuple[dict, dict[str, np.ndarray]]:
    """Batch gears as one document: each gear's plan document, every array stored once under a digest of
    its content (the gears' weights are the same arrays)."""
    arrays, plans = {}, {}
    for gear, plan in gp.plans.items():
        doc, own = plan_document(plan)
        key = {}
        for k, a in own.items():
            a = np.ascontiguousarray(a)
            key[k] = "w" + hashlib.sha1(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).hexdigest()[:20]
            arrays.setdefault(key[k], a)
        doc["constants"] = {i: key[k] for i, k in doc["constants"].items()}
        plans[str(gear)] = _rekey(doc, key)
    spec = lambda t: [t.name, t.dtype.str, list(t.shape), t.kind]  # noqa: E731
    return {"format": GEARS, "version": VERSION, "symbol": gp.symbol, "batched": list(gp.batched),
            "inputs": [spec(t) for t in gp.inputs], "outputs": [spec(t) for t in gp.outputs],
            "plans": plans}, arrays


def _rekey(v, key: dict):
    """A document with every array reference {"__array__": k} renamed to key[k]."""
    if isinstance(v, dict):
        if set(v) == {"__array__"}:
            return {"__array__": key[v["__array__"]]}
        return {k: _rekey(x, key) for k, x in v.items()}
    if isinstance(v, list):
        return [_rekey(x, key) for x in v]
    return v


def save_gears(gp: GearPlans, path: str | os.PathLike) -> str:
    """Write batch gears (ge.compiler.compile_gears) to `path`, as `save` does a plan."""
    return _write(*gears_document(gp), path)


def save(plan: Plan, path: str | os.PathLike) -> str:
    """Write `plan` to `path`: a zip file (e.g. model.gem), or a directory if `path` is one (or ends in /).
    Returns the path written."""
    return _write(*plan_document(plan), path)


def _write(doc: dict, arrays: dict, path) -> str:
    text = json.dumps(doc, separators=(",", ":"))
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    path = os.fspath(path)
    if os.path.isdir(path) or path.endswith(("/", os.sep)):
        os.makedirs(path, exist_ok=True)
        for name, data in ((WEIGHTS_NPZ, buf.getbuffer()), (PLAN_JSON, text.encode())):
            _atomic_write(os.path.join(path, name), data)
        return path
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
            z.writestr(PLAN_JSON, text)
            z.writestr(WEIGHTS_NPZ, buf.getbuffer())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a saved model is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _atomic_write(path: str, data) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def is_offline_model(model) -> bool:
    """A path to a saved plan: a `.gem` file or directory, or a directory holding plan.json."""
    if not isinstance(model, (str, os.PathLike)):
        return False
    path = os.fspath(model)
    return path.rstrip("/\\").endswith(".gem") or (
        os.path.isdir(path) and os.path.isfile(os.path.join(path, PLAN_JSON)))


# -- loading ----------------------------------------------------------------------------------------

def _read_members(path: str) -> tuple[bytes, bytes]:
    if os.path.isdir(path):
        out = []
        for name in (PLAN_JSON, WEIGHTS_NPZ):
            p = os.path.join(path, name)
            if not os.path.isfile(p):
                raise ModelLoadError(f"offline model '{path}': missing {name}")
            with open(p, "rb") as f:
                out.append(f.read())
        return out[0], out[1]
    if not os.path.isfile(path):
        raise ModelLoadError(f"offline model '{path}' does not exist")
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            for name in (PLAN_JSON, WEIGHTS_NPZ):
                if name not in names:
                    raise ModelLoadError(f"offline model '{path}': missing {name}")
            return z.read(PLAN_JSON), z.read(WEIGHTS_NPZ)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, RuntimeError) as e:
        raise ModelLoadError(f"offline model '{path}' is not a ge plan file: {e}") from e


class _ViewFile(io.RawIOBase):
    """A read-only, seekable file over a memoryview (zipfile reads only headers through it)."""

    def __init__(self, view: memoryview):
        self.view, self.pos = view, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else len(self.view) + offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = len(self.view) if n is None or n < 0 else min(len(self.view), self.pos + n)
        data = bytes(self.view[self.pos:end])
        self.pos = end
        return data


def _stored_members(view: memoryview) -> dict[str, memoryview]:
    """name -> data of each member of a zip held in `view`; all must be stored (uncompressed)."""
    out = {}
    with zipfile.ZipFile(_ViewFile(view)) as z:
        for info in z.infolist():
            if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 1:
                raise ValueError(f"member {info.filename} is compressed or encrypted")
            h = info.header_offset
            n, m = struct.unpack("<HH", view[h + 26:h + 30])
            start = h + 30 + n + m
            if view[h:h + 4] != b"PK\x03\x04" or start + info.file_size > len(view):
                raise ValueError(f"bad local header for {info.filename}")
            out[info.filename] = view[start:start + info.file_size]
    return out


def _npz_fast(view: memoryview) -> dict[str, np.ndarray]:
    """The arrays of an npz written by np.savez, each copied once out of `view` (no pickle: object dtypes
    are refused). Raises on anything unusual; the caller then falls back to np.load."""
    arrays = {}
    for name, data in _stored_members(view).items():
        if not name.endswith(".npy"):
            raise ValueError(f"member {name} is not an array")
        f = _ViewFile(data[:65536 + 16])
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"npy version {version}")
        if dtype.hasobject:
            raise ValueError("object arrays need pickle")
        count = int(np.prod(shape, dtype=np.int64))
        a = np.frombuffer(data, dtype, count, offset=f.tell())
        arrays[name[:-4]] = a.reshape(shape, order="F" if fortran else "C").copy(order="K")
        del a
    return arrays


def _load_fast(path: str):
    """(plan.json bytes, arrays) through one mmap of the file: each weight is copied once. None on any
    surprise (the general path then reads the file and reports what is wrong)."""
    try:
        npz_path = os.path.join(path, WEIGHTS_NPZ) if os.path.isdir(path) else path
        with open(npz_path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            view = memoryview(mm)
            try:
                if os.path.isdir(path):
                    text, arrays = None, _npz_fast(view)
                else:
                    members = _stored_members(view)
                    text = bytes(members[PLAN_JSON])
                    arrays = _npz_fast(members[WEIGHTS_NPZ])
                    members = None
            finally:
                view.release()
        if text is None:
            with open(os.path.join(path, PLAN_JSON), "rb") as f:
                text = f.read()
        return text, arrays
    except Exception:  # noqa: BLE001 - any surprise: the general path decides
        return None


def load(path: str | os.PathLike) -> Plan | GearPlans:
    """A Plan (or the GearPlans of `save_gears`) from a file or directory written by `save`; raises
    ModelLoadError if it cannot be used."""
    path = os.fspath(path)
    fast = _load_fast(path)
    if fast is not None:
        text, arrays = fast
    else:
        text, npz = _read_members(path)
        arrays = None
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise ModelLoadError(f"offline model '{path}': {PLAN_JSON} is not valid JSON: {e}") from e
    if not isinstance(doc, dict) or doc.get("format") not in (FORMAT, GEARS):
        raise ModelLoadError(f"offline model '{path}' is not a ge plan (format "
                             f"{doc.get('format') if isinstance(doc, dict) else None!r})")
    if doc.get("version") != VERSION:
        raise ModelLoadError(f"offline model '{path}' has format version {doc.get('version')!r}; this ge "
                             f"reads version {VERSION}: compile the model again")
    try:
        if arrays is None:
            with np.load(io.BytesIO(npz), allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
    except Exception as e:  # noqa: BLE001 - any decode failure is a bad file
        raise ModelLoadError(f"offline model '{path}': cannot read {WEIGHTS_NPZ}: {e}") from e
    try:
        return _build(doc, arrays) if doc["format"] == FORMAT else _build_gears(doc, arrays)
    except ModelLoadError as e:
        raise ModelLoadError(f"offline model '{path}': {e}") from e
    except GEError as e:
        raise ModelLoadError(f"offline model '{path}' cannot be loaded: {e}") from e
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise ModelLoadError(f"offline model '{path}' is corrupted: {type(e).__name__}: {e}") from e


def _build_gears(doc: dict, arrays: dict) -> GearPlans:
    plans = {int(g): _build(d, arrays) for g, d in sorted(doc["plans"].items(), key=lambda kv: int(kv[0]))}
    if not plans or any(g < 1 for g in plans):
        raise ModelLoadError(f"gears {sorted(plans)} are not positive batch sizes")
    spec = lambda name, dt, shape, kind: PlanTensor(-1, str(name), np.dtype(dt), tuple(shape), str(kind))  # noqa
    ins, outs = tuple(spec(*t) for t in doc["inputs"]), tuple(spec(*t) for t in doc["outputs"])
    batched = tuple(bool(b) for b in doc["batched"])
    top = plans[max(plans)]
    if len(ins) != len(top.inputs) or len(outs) != len(top.outputs) or len(batched) != len(outs):
        raise ModelLoadError("the gears' inputs and outputs do not match their plans")
    ins = tuple(dataclasses.replace(t, index=top.inputs[k]) for k, t in enumerate(ins))
    outs = tuple(dataclasses.replace(t, index=top.outputs[k]) for k, t in enumerate(outs))
    return GearPlans(str(doc["symbol"]), MappingProxyType(plans), ins, outs, batched)


def _build(doc: dict, arrays: dict) -> Plan:
    opts = {k: _decode(v, arrays) for k, v in doc["options"].items()}
    options = Options(**{k: v for k, v in opts.items() if k in Options.__dataclass_fields__})
    tensors = tuple(PlanTensor(i, str(name), np.dtype(dt), tuple(shape), str(kind))
                    for i, (name, dt, shape, kind) in enumerate(doc["tensors"]))
    n_t = len(tensors)
    constants = {}
    for i, key in doc["constants"].items():
        i = int(i)
        a, t = arrays[key], tensors[i]
        if a.dtype != t.dtype or (t.is_static and tuple(a.shape) != t.shape):
            raise ModelLoadError(f"constant '{t.name}' is {a.dtype}{list(a.shape)} in {WEIGHTS_NPZ}, "
                                 f"{t.dtype}{list(t.shape)} in {PLAN_JSON}")
        constants[i] = a

    def index(i) -> int:
        i = int(i)
        if not -1 <= i < n_t:
            raise ModelLoadError(f"tensor index {i} out of range (0..{n_t - 1})")
        return i

    spec = [TensorSpec(t.shape, t.dtype) if t.is_static else None for t in tensors]
    nodes = []
    for step, d in enumerate(doc["nodes"]):
        attrs = {k: _decode(v, arrays) for k, v in d["attrs"].items()}
        ins, outs = tuple(index(i) for i in d["inputs"]), tuple(index(o) for o in d["outputs"])
        kernel = lookup(d["op_type"], d["domain"], int(d["opset"]), d["name"])
        launch, dynamic = None, bool(d["dynamic"])
        if not dynamic:
            ctx = KernelContext(d["op_type"], d["name"], attrs, [None if i < 0 else spec[i] for i in ins],
                                [constants.get(i) if (i >= 0 and k in kernel.value_inputs) else None
                                 for k, i in enumerate(ins)], int(d["opset"]), n_outputs=len(outs))
            ctx.outputs = kernel.infer(ctx)
            launch = kernel.prepare(ctx)
            if (launch is None) != bool(d["alias"]):
                what = "gives no task" if launch is None else "gives a task"
                raise ModelLoadError(f"node '{d['name']}' ({d['op_type']}): the kernel of this ge {what}, "
                                     "the file says otherwise; compile the model again")
        nodes.append(PlanNode(step, d["name"], d["op_type"], d["domain"], int(d["opset"]), attrs, ins, outs,
                              kernel, launch, dynamic, d["engine"], int(d["stream"]), bool(d.get("no_task"))))
    events = tuple(SyncEvent(*map(int, e)) for e in doc["events"])
    n_n = len(nodes)
    for e in events:
        if not (0 <= e.record_after < n_n and 0 <= e.wait_before < n_n):
            raise ModelLoadError(f"event {e.id} refers to a step outside 0..{n_n - 1}")
    memory = None
    if doc["memory"] is not None:
        m, s = doc["memory"], doc["memory"]["stats"]
        fields = m["tensor_fields"]
        stats = {k: _decode(v, arrays) for k, v in s.items()}
        stats["totals"] = dict(stats["totals"])
        memory = MemoryPlan(
            tuple(TensorMemory(**dict(zip(fields, t, strict=True))) for t in m["tensors"]),
            tuple(tuple((int(o), int(b)) for o, b in ws) for ws in m["workspaces"]),
            dict(m["segments"]), MemoryStats(**stats))
        if len(memory.tensors) != n_t or len(memory.workspaces) != n_n:
            raise ModelLoadError("the memory plan does not match the tensors and nodes")
    return Plan(str(doc["name"]), tensors, tuple(nodes), tuple(index(i) for i in doc["inputs"]),
                tuple(index(i) for i in doc["outputs"]), constants, options, memory=memory, events=events,
                single_stream_reason=doc["single_stream_reason"])

"""The offline plan format: a Plan (or batch gears) as a JSON document plus named arrays, and back.

- plan document: {"format": "ge.plan", "version": 1, name, options, tensors, inputs, outputs, constants,
  nodes (op/domain/opset/attrs/inputs/outputs/engine/stream/dynamic/alias/no_task), events, memory,
  single_stream_reason}. Attribute values are JSON; arrays, tuples, dicts and numpy scalars are tagged
  objects ({"__array__": key}, {"__tuple__": [...]}, {"__dict__": {...}}, {"__np__": dtype, "v": value}).
  Arrays: constants ("c<tensor index>") and array-valued attributes ("a<n>"); no pickle anywhere.
- gears document (`save_gears`, `ge compile --dynamic-batch`): {"format": "ge.gears", "version": 1, symbol,
  batched, inputs, outputs, plans: {gear: plan document}}; every array is stored once under a digest of
  its content ("w<sha1>"), so the gears share their weights.
Building a Plan looks each kernel up by (op_type, domain, opset) and re-runs only infer + prepare for
static nodes (tiled for the plan's aicore_num); the order, streams, events and memory plan come from the
document.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from ..errors import GEError, ModelLoadError
from ..kernels.bind import prepare_launch
from ..kernels.registry import TensorSpec, lookup
from ..options import Options
from ..plan import GearPlans, MemoryPlan, MemoryStats, Plan, PlanNode, PlanTensor, SyncEvent, TensorMemory

FORMAT, GEARS, VERSION = "ge.plan", "ge.gears", 1


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


def parse(text: bytes, path: str) -> dict:
    """The JSON document of plan.json, checked for this format and version."""
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise ModelLoadError(f"offline model '{path}': plan.json is not valid JSON: {e}") from e
    if not isinstance(doc, dict) or doc.get("format") not in (FORMAT, GEARS):
        raise ModelLoadError(f"offline model '{path}' is not a ge plan (format "
                             f"{doc.get('format') if isinstance(doc, dict) else None!r})")
    if doc.get("version") != VERSION:
        raise ModelLoadError(f"offline model '{path}' has format version {doc.get('version')!r}; this ge "
                             f"reads version {VERSION}: compile the model again")
    return doc


def build(doc: dict, arrays: dict) -> Plan | GearPlans:
    return _build(doc, arrays) if doc["format"] == FORMAT else _build_gears(doc, arrays)


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
            raise ModelLoadError(f"constant '{t.name}' is {a.dtype}{list(a.shape)} in weights.npz, "
                                 f"{t.dtype}{list(t.shape)} in plan.json")
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
            _, launch = prepare_launch(kernel, d["op_type"], d["name"], attrs,
                                       [None if i < 0 else spec[i] for i in ins],
                                       [constants.get(i) if (i >= 0 and k in kernel.value_inputs) else None
                                        for k, i in enumerate(ins)], int(d["opset"]), len(outs),
                                       options.aicore_num or 1)
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

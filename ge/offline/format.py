"""The offline plan format: a Plan (or batch gears) as a JSON document plus named arrays, and back.

- plan document: {"format": "ge.plan", "version": 1, name, options, tensors, inputs, outputs, constants,
  nodes (op/domain/opset/attrs/inputs/outputs/engine/stream/dynamic/alias/no_task), events, memory,
  single_stream_reason}. Attribute values are JSON; arrays, tuples, dicts and numpy scalars are tagged
  objects ({"__array__": key}, {"__tuple__": [...]}, {"__dict__": {...}}, {"__np__": dtype, "v": value}).
  Arrays: constants ("c<tensor index>") and array-valued attributes ("a<n>"); no pickle anywhere.
  Control nodes (If, Loop, Scan, SequenceMap) keep their bodies as "bodies": [[attribute, plan document,
  captured inputs], ...], each body's arrays under its own key prefix; a tensor whose value is not a tensor
  (a sequence or optional of the host ops) has its value kind as a fifth entry. String tensors have the
  element type "string"; a string array (a constant, an attribute) is JSON text in the document,
  {"__strings__": [...], "shape": [...]}, never a pickled npz member.
- gears document (`save_gears`, `ge compile --dynamic-batch` / `--dynamic-dims`): {"format": "ge.gears",
  "version": 4, symbol, batched, inputs, outputs, plans: {gear: plan document}}; every array is stored once
  under a digest of its content ("w<sha1>"), so the gears share their weights. Version 4 (GEARS_VERSION)
  adds dims gears: "dims" [[input name, axis], ...] (input_shape's -1s), gear keys "d0,d1,..." (their
  sizes in that order), and "fallback": the dynamic plan's document (runtime_v2 for other shapes) or null.
The text ends with a sha256 digest of itself (`seal`): a plan.json edited after ge wrote it is refused at
load (integrity). Reading it back (read.py, then verify.py) trusts nothing in it either, so a file whose
digest was recomputed still cannot make a runtime read or write outside its memory (safety).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping

import numpy as np

from ..errors import GEError
from ..ir.dtypes import TOKEN
from ..options import Options
from ..plan import GearPlans, MemoryStats, Plan, TensorMemory

FORMAT, GEARS, VERSION = "ge.plan", "ge.gears", 3
READS = (2, 3)   # version 2: no bodies, no value kinds
GEARS_VERSION, GEARS_READS = 4, (2, 3, 4)   # gears documents; version 4: dims gears and their fallback
_TAIL = '"digest":"'   # plan.json ends with ,"digest":"<sha256 hex>"}


def seal(doc: dict) -> str:
    """plan.json's text: the document, its last key the sha256 of the text with the digest zeroed."""
    text = json.dumps({**doc, "digest": "0" * 64}, separators=(",", ":"))
    head = text[:-66]
    return head + hashlib.sha256(text.encode()).hexdigest() + '"}'


def digest_matches(text: bytes) -> bool:
    """Whether plan.json is as ge wrote it (an edit without recomputing the digest is refused at load)."""
    tail = len(_TAIL) + 66
    if len(text) < tail or text[-tail:-66] != _TAIL.encode() or text[-2:] != b'"}':
        return False
    claimed = text[-66:-2]
    return hashlib.sha256(text[:-66] + b"0" * 64 + b'"}').hexdigest().encode() == claimed


class _Encoder:
    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, a: np.ndarray, where: str) -> dict:
        if a.dtype.hasobject:
            return strings(a, where)
        key = f"a{len(self.arrays)}"   # one counter for a plan and its bodies: keys never collide
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
            return {"__np__": TOKEN.get(v.dtype, v.dtype.str), "v": v.item()}
        if isinstance(v, list):
            return [self.value(x, where) for x in v]
        if isinstance(v, tuple):
            return {"__tuple__": [self.value(x, where) for x in v]}
        if isinstance(v, Mapping) and all(isinstance(k, str) for k in v):
            return {"__dict__": {k: self.value(x, where) for k, x in v.items()}}
        raise GEError(f"cannot save {where}: values of type {type(v).__name__} (e.g. subgraphs) are not "
                      "supported by offline models")


def strings(a: np.ndarray, where: str) -> dict:
    """A string array as JSON text: {"__strings__": [str, ...], "shape": [...]} (npz would need pickle, which
    ge never loads; read.py bounds it)."""
    flat = a.reshape(-1).tolist()
    bad = next((x for x in flat if not isinstance(x, str)), None)
    if bad is not None:
        raise GEError(f"cannot save {where}: an element of its object array is a {type(bad).__name__}, not str "
                      "(other objects would need pickle)")
    return {"__strings__": flat, "shape": list(a.shape)}


def plan_document(plan: Plan, enc: _Encoder | None = None, prefix: str = "") -> tuple[dict, dict[str, np.ndarray]]:
    """(the JSON document, the arrays for weights.npz) of a plan; a body's document shares its outer plan's
    encoder, its constants under `prefix`."""
    enc = enc or _Encoder()
    constants = {}
    for i, a in plan.constants.items():
        a = np.asarray(a)
        if a.dtype.hasobject:   # a string constant: its text in the document
            constants[str(i)] = strings(a, f"constant '{plan.tensors[i].name}'")
            continue
        constants[str(i)] = key = f"{prefix}c{i}"
        enc.arrays[key] = a
    opts = {}
    for f in Options.__dataclass_fields__:
        opts[f] = enc.value(getattr(plan.options, f), f"option {f}")
    nodes = []
    for n in plan.nodes:
        d = {"name": n.name, "op_type": n.op_type, "domain": n.domain, "opset": n.opset,
             "attrs": {k: enc.value(v, f"attribute '{k}' of node '{n.name}'") for k, v in n.attrs.items()},
             "inputs": list(n.inputs), "outputs": list(n.outputs), "engine": n.engine, "stream": n.stream,
             "dynamic": n.is_dynamic, "alias": n.launch is None, "no_task": n.no_task}
        if n.bodies:
            d["bodies"] = [[attr, plan_document(body, enc, f"{prefix}b{n.step}.{k}.")[0], captured]
                           for k, (attr, body, captured) in enumerate(n.bodies)]
        nodes.append(d)
    mem = None
    if plan.memory is not None:
        m, s = plan.memory, plan.memory.stats
        fields = [f.name for f in dataclasses.fields(TensorMemory)]
        mem = {"tensor_fields": fields,
               "tensors": [[getattr(t, f) for f in fields] for t in m.tensors],
               "workspaces": [[list(w) for w in ws] for ws in m.workspaces],
               "segments": dict(m.segments),
               "fixed_workspaces": sorted(m.fixed_workspaces),   # steps whose workspaces are in "fixed"
               "stats": {f.name: enc.value(getattr(s, f.name), f"memory stat {f.name}")
                         for f in dataclasses.fields(MemoryStats)}}
    doc = {"format": FORMAT, "version": VERSION, "name": plan.name, "options": opts,
           "tensors": [[t.name, TOKEN[t.dtype], list(t.shape), t.kind] + ([t.value_kind] if t.value_kind != "tensor"
                                                                           else []) for t in plan.tensors],
           "inputs": list(plan.inputs), "outputs": list(plan.outputs), "constants": constants,
           "nodes": nodes,
           "events": [[e.id, e.record_after, e.wait_before, e.src_stream, e.dst_stream] for e in plan.events],
           "memory": mem, "single_stream_reason": plan.single_stream_reason}
    return doc, enc.arrays


def gears_document(gp: GearPlans) -> tuple[dict, dict[str, np.ndarray]]:
    """Batch gears as one document: each gear's plan document, every array stored once under a digest of
    its content (the gears' weights are the same arrays)."""
    arrays = {}

    def shared(plan: Plan) -> dict:
        doc, own = plan_document(plan)
        key = {}
        for k, a in own.items():
            a = np.asarray(a)   # (np.ascontiguousarray makes a 0-d constant 1-d: refused at load)
            key[k] = "w" + hashlib.sha1(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).hexdigest()[:20]
            arrays.setdefault(key[k], a)
        doc["constants"] = {i: key[k] if isinstance(k, str) else k for i, k in doc["constants"].items()}
        return _rekey(doc, key)

    plans = {(",".join(map(str, g)) if isinstance(g, tuple) else str(g)): shared(p) for g, p in gp.plans.items()}
    spec = lambda t: [t.name, TOKEN[t.dtype], list(t.shape), t.kind]  # noqa: E731
    return {"format": GEARS, "version": GEARS_VERSION, "symbol": gp.symbol, "batched": list(gp.batched),
            "inputs": [spec(t) for t in gp.inputs], "outputs": [spec(t) for t in gp.outputs],
            "plans": plans, "dims": [list(d) for d in gp.dims],
            "fallback": shared(gp.fallback) if gp.fallback is not None else None}, arrays


def _rekey(v, key: dict):
    """A document with every array reference {"__array__": k} renamed to key[k]."""
    if isinstance(v, dict):
        if set(v) == {"__array__"}:
            return {"__array__": key[v["__array__"]]}
        return {k: _rekey(x, key) for k, x in v.items()}
    if isinstance(v, list):
        return [_rekey(x, key) for x in v]
    return v

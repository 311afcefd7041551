"""Reading an offline plan document: every field type-checked and range-checked as it is read.

An offline model is untrusted input (a file users download and share). Reading trusts nothing: each field
must have its type (an int is an int, not a bool or a string), each index its range, each dtype one ge
computes in, each tagged value its shape; a failure is a ModelLoadError naming the field ("nodes[12].inputs[1]:
tensor index 917 is outside 0..301"). The Plan built here is then checked as a whole by verify.py before any
runtime sees it. Static nodes go through their kernel's own infer + prepare (tiled for the plan's
aicore_num); verify.py compares the inferred outputs with the stored tensors.
"""
from __future__ import annotations

import dataclasses
import json
import math
from types import MappingProxyType

import numpy as np

from ..errors import GEError, ModelLoadError
from ..ir.dtypes import BFLOAT16, FROM_TOKEN, STRING
from ..kernels import sequence
from ..kernels.bind import prepare_launch
from ..kernels.registry import TensorSpec, lookup
from ..kernels.strings import on_strings
from ..npu.engines import ENGINES
from ..option_values import MAX_GEARS
from ..options import Options
from ..partition import BODY   # (registers the PartitionedCall host op a sunk piece's node binds to)
from ..plan import (SUNK_DOMAIN, SUNK_OP, GearPlans, MemoryPlan, MemoryStats, Plan, PlanNode, PlanTensor, SyncEvent,
                    TensorMemory)
from .bounded import Check, host_memory
from .format import FORMAT, GEARS, GEARS_READS, GEARS_VERSION, READS, VERSION, digest_matches

DTYPES = FROM_TOKEN   # the element types ge computes in, by their .str (bfloat16 by name)
KINDS = ("input", "const", "activation")
SEGMENTS = ("weights", "feature_map", "atomic", "io", "dynamic", "fixed", "variable")
MAX_RANK, MAX_DIM, MAX_NAME, MAX_STRING = 32, 1 << 40, 4096, 1 << 24
MAX_DEPTH = 16   # bodies inside bodies, as the ONNX frontend allows
VALUE_KINDS = ("tensor", "sequence", "optional", "optional_sequence", "map(int64)", "map(string)",
               "seq(map(int64))", "seq(map(string))")
BODIES = {"If": ("then_branch", "else_branch"), "Loop": ("body",), "Scan": ("body",), "SequenceMap": ("body",)}


def parse(text: bytes, path: str) -> dict:
    """The JSON document of plan.json, checked for this format and version."""
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ModelLoadError(f"offline model '{path}': plan.json is not valid JSON: {type(e).__name__}: "
                             f"{str(e)[:200]}") from None
    if not isinstance(doc, dict) or doc.get("format") not in (FORMAT, GEARS):
        raise ModelLoadError(f"offline model '{path}' is not a ge plan (format "
                             f"{doc.get('format') if isinstance(doc, dict) else None!r})")
    reads, top = (READS, VERSION) if doc.get("format") == FORMAT else (GEARS_READS, GEARS_VERSION)
    if doc.get("version") not in reads:
        raise ModelLoadError(f"offline model '{path}' has format version {doc.get('version')!r}; this ge "
                             f"reads versions {reads[0]}-{top}: compile the model again")
    if not digest_matches(text):
        raise ModelLoadError(f"offline model '{path}': plan.json was changed after ge wrote it (its digest does "
                             "not match its text); an edited plan is refused: compile the model again")
    return doc


def weights_check(doc: dict, where: str) -> Check:
    """What weights.npz may hold, from plan.json (bounded.py checks each npy header against it before any
    data is read): each constant's dtype and shape, and all arrays within the device capacity the plan names
    (and the host's memory). Lenient: a malformed field adds no expectation; build() reports it."""
    want, caps = {}, []

    def walk(d, depth=0):
        if not isinstance(d, dict) or depth > MAX_DEPTH:
            return
        opts = d.get("options")
        cap = opts.get("device_memory_bytes") if isinstance(opts, dict) else None
        if isinstance(cap, int) and not isinstance(cap, bool) and 0 < cap <= 1 << 50:
            caps.append(cap)
        tensors, consts = d.get("tensors"), d.get("constants")
        if isinstance(tensors, list) and isinstance(consts, dict):
            for i, key in consts.items():
                ok = isinstance(i, str) and i.isascii() and i.isdigit() and int(i) < len(tensors)
                t = tensors[int(i)] if ok else None
                if (isinstance(key, str) and isinstance(t, list) and len(t) >= 3 and isinstance(t[0], str)
                        and isinstance(t[1], str) and t[1] in DTYPES and isinstance(t[2], list)
                        and all(type(x) is int and x >= 0 for x in t[2])):
                    want.setdefault(key, (t[1], tuple(t[2]), f"constants[{i!r}]: '{t[0][:60]}'"))
        for n in d.get("nodes") or () if isinstance(d.get("nodes"), list) else ():
            for b in (n.get("bodies") or ()) if isinstance(n, dict) and isinstance(n.get("bodies"), list) else ():
                if isinstance(b, list) and len(b) == 3:
                    walk(b[1], depth + 1)

    plans = doc.get("plans")
    try:
        for d in (plans.values() if doc.get("format") == GEARS and isinstance(plans, dict) else [doc]):
            walk(d)
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
        pass   # a document this malformed is refused by build(), naming the field
    device = max(caps) if caps else Options().device_memory_bytes
    host = host_memory()
    why = (f"the device capacity plan.json names" if device <= host else "the host's physical memory")
    return Check(where, min(device, host), why, want)


# -- typed fields ---------------------------------------------------------------------------------

def _bad(where: str, what: str) -> ModelLoadError:
    return ModelLoadError(f"{where}: {what}")


def field(d, key: str, where: str):
    if not isinstance(d, dict):
        raise _bad(where, f"expected an object, got {type(d).__name__}")
    if key not in d:
        raise _bad(where, f"missing '{key}'")
    return d[key]


def integer(v, where: str, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _bad(where, f"expected an integer, got {type(v).__name__} {str(v)[:40]}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise _bad(where, f"{v} is outside {lo}..{hi}")
    return v


def optional_int(v, where: str, lo: int | None = None, hi: int | None = None) -> int | None:
    return None if v is None else integer(v, where, lo, hi)


def text(v, where: str, optional: bool = False) -> str | None:
    if v is None and optional:
        return None
    if not isinstance(v, str) or len(v) > MAX_NAME:
        raise _bad(where, f"expected a string of at most {MAX_NAME} characters, got {type(v).__name__}")
    return v


def array(v, where: str, length: int | None = None) -> list:
    if not isinstance(v, list):
        raise _bad(where, f"expected a list, got {type(v).__name__}")
    if length is not None and len(v) != length:
        raise _bad(where, f"expected {length} items, got {len(v)}")
    return v


def flag(v, where: str) -> bool:
    if not isinstance(v, bool):
        raise _bad(where, f"expected true or false, got {type(v).__name__}")
    return v


def dtype(v, where: str) -> np.dtype:
    if v not in DTYPES:
        raise _bad(where, f"element type {str(v)[:20]!r} is not one of ge's ({', '.join(sorted(DTYPES))})")
    return DTYPES[v]


def decode(v, arrays: dict, where: str, depth: int = 0):
    """A tagged JSON value (format.py) back to Python: arrays from weights.npz, tuples, dicts, numpy scalars."""
    if depth > 16:
        raise _bad(where, "values nest deeper than 16 levels")
    if isinstance(v, list):
        return [decode(x, arrays, where, depth + 1) for x in v]
    if isinstance(v, dict):
        if set(v) == {"__array__"}:
            key = v["__array__"]
            if not isinstance(key, str) or key not in arrays:
                raise _bad(where, f"array {str(key)[:40]!r} is not in weights.npz")
            return arrays[key]
        if set(v) == {"__strings__", "shape"}:
            return strings(v, where)
        if set(v) == {"__tuple__"}:
            return tuple(decode(x, arrays, where, depth + 1) for x in array(v["__tuple__"], where))
        if set(v) == {"__dict__"} and isinstance(v["__dict__"], dict):
            return {text(k, where): decode(x, arrays, where, depth + 1) for k, x in v["__dict__"].items()}
        if set(v) == {"__np__", "v"} and isinstance(v["v"], (bool, int, float)):
            try:
                return dtype(v["__np__"], where).type(v["v"])
            except OverflowError:
                raise _bad(where, f"{v['v']} does not fit {v['__np__']}") from None
        raise _bad(where, f"unknown tagged value {sorted(v)[:4]}")
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise _bad(where, f"unexpected {type(v).__name__}")


def strings(v: dict, where: str) -> np.ndarray:
    """A string array from its JSON text (format.strings): str elements, as many as its static shape holds,
    each at most MAX_STRING characters."""
    dims = shape(v["shape"], f"{where}.shape")
    if not all(isinstance(d, int) for d in dims):
        raise _bad(where, "a string array's shape must be static")
    items = array(v["__strings__"], where)
    if len(items) != math.prod(dims):
        raise _bad(where, f"{len(items)} strings for shape {list(dims)}")
    bad = next((k for k, x in enumerate(items) if not isinstance(x, str) or len(x) > MAX_STRING), None)
    if bad is not None:
        raise _bad(f"{where}[{bad}]", f"expected a string of at most {MAX_STRING} characters")
    out = np.empty(len(items), object)
    out[:] = items
    return out.reshape(dims)


def shape(v, where: str) -> tuple:
    dims = array(v, where)
    if len(dims) > MAX_RANK:
        raise _bad(where, f"rank {len(dims)} is above {MAX_RANK}")
    return tuple(d if isinstance(d, str) and d else integer(d, f"{where}[{k}]", 0, MAX_DIM)
                 for k, d in enumerate(dims))


# -- the plan ------------------------------------------------------------------------------------------

def build(doc: dict, arrays: dict) -> Plan | GearPlans:
    return build_plan(doc, arrays) if doc["format"] == FORMAT else _build_gears(doc, arrays)


def _build_gears(doc: dict, arrays: dict) -> GearPlans:
    raw = field(doc, "plans", "gears")
    if not isinstance(raw, dict) or not raw:
        raise _bad("plans", "expected an object of gear -> plan")
    dims = _dims(doc)
    plans = {}
    for g, d in raw.items():
        parts = g.split(",") if isinstance(g, str) and len(g) < 400 else ["?"]
        if not all(p.isdigit() and 1 <= int(p) <= 1 << 20 for p in parts) or len(parts) != max(len(dims), 1) \
                or (not dims and "," in g):
            raise _bad(f"plans[{g[:20]!r}]", f"a gear is {len(dims)} positive sizes joined by ','" if dims
                       else "a gear is a positive batch size")
        plans[tuple(map(int, parts)) if dims else int(g)] = build_plan(d, arrays, f"plans[{g}].")
    if len(plans) > MAX_GEARS:
        raise _bad("plans", f"{len(plans)} gears; at most {MAX_GEARS}")
    plans = dict(plans if dims else sorted(plans.items()))
    top = plans[max(plans)]
    ins = tuple(_spec(t, f"inputs[{k}]") for k, t in enumerate(array(field(doc, "inputs", "gears"), "inputs")))
    outs = tuple(_spec(t, f"outputs[{k}]") for k, t in enumerate(array(field(doc, "outputs", "gears"), "outputs")))
    batched = tuple(flag(b, f"batched[{k}]") for k, b in enumerate(array(field(doc, "batched", "gears"),
                                                                         "batched", len(outs))))
    if len(ins) != len(top.inputs) or len(outs) != len(top.outputs):
        raise ModelLoadError("the gears' inputs and outputs do not match their plans")
    ins = tuple(dataclasses.replace(t, index=top.inputs[k]) for k, t in enumerate(ins))
    outs = tuple(dataclasses.replace(t, index=top.outputs[k]) for k, t in enumerate(outs))
    fallback = doc.get("fallback")
    fallback = None if fallback is None else build_plan(fallback, arrays, "fallback.")
    if dims:
        _check_dims_gears(dims, plans, ins, outs, fallback)
    elif fallback is not None:
        raise _bad("fallback", "only dims gears carry a fallback plan")
    return GearPlans(text(field(doc, "symbol", "gears"), "symbol"), MappingProxyType(plans), ins, outs, batched,
                     dims=dims, fallback=fallback)


def _dims(doc: dict) -> tuple:
    """Dims gears' varying dims: [[input name, axis], ...] (absent or [] for batch gears)."""
    raw = doc.get("dims") or []
    out = []
    for k, d in enumerate(array(raw, "dims")):
        d = array(d, f"dims[{k}]", 2)
        out.append((text(d[0], f"dims[{k}].name"), integer(d[1], f"dims[{k}].axis", 0, MAX_RANK - 1)))
    if len(set(out)) != len(out):
        raise _bad("dims", "a dim is named twice")
    return tuple(out)


def _check_dims_gears(dims, plans, ins, outs, fallback) -> None:
    """Every gear's plan has the declared inputs, each the gear's sizes on the varying dims and the declared
    size elsewhere (a run picks a gear by these shapes); the fallback plan has the same inputs and outputs."""
    by_name = {t.name: k for k, t in enumerate(ins)}
    for k, (name, axis) in enumerate(dims):
        if name not in by_name or axis >= len(ins[by_name[name]].shape):
            raise _bad(f"dims[{k}]", f"{name[:40]}[{axis}] is not a dim of an input")
    for g, p in plans.items():
        want = [list(t.shape) for t in ins]
        for (name, axis), size in zip(dims, g):
            want[by_name[name]][axis] = size
        got = [list(p.tensors[i].shape) for i in p.inputs]
        if want != got or len(p.outputs) != len(outs):
            raise _bad(f"plans[{','.join(map(str, g))}]", f"its inputs are {got}, the gear's are {want}")
    if fallback is not None and ([(fallback.tensors[i].name, fallback.tensors[i].dtype) for i in fallback.inputs]
                                 != [(t.name, t.dtype) for t in ins] or len(fallback.outputs) != len(outs)):
        raise _bad("fallback", "its inputs and outputs are not the gears'")


def _spec(t, where: str, index: int = -1) -> PlanTensor:
    t = array(t, where)
    if len(t) not in (4, 5):
        raise _bad(where, f"expected 4 or 5 items, got {len(t)}")
    name, dt, dims, kind = t[:4]
    kind = text(kind, f"{where}.kind")
    if kind not in KINDS:
        raise _bad(f"{where}.kind", f"{kind[:20]!r} is not one of {KINDS}")
    value_kind = text(t[4], f"{where}.value_kind") if len(t) == 5 else "tensor"
    if value_kind not in VALUE_KINDS:
        raise _bad(f"{where}.value_kind", f"{value_kind[:20]!r} is not one of {VALUE_KINDS}")
    return PlanTensor(index, text(name, f"{where}.name"), dtype(dt, f"{where}.dtype"), shape(dims, f"{where}.shape"),
                      kind, value_kind)


def _options(doc, arrays, at: str) -> Options:
    raw = field(doc, "options", at.rstrip("."))
    if not isinstance(raw, dict):
        raise _bad(f"{at}options", "expected an object")
    known = {k: decode(v, arrays, f"{at}options.{k}") for k, v in raw.items() if k in Options.__dataclass_fields__}
    try:
        return Options(**known)
    except (GEError, TypeError, ValueError) as e:
        raise _bad(f"{at}options", str(e)[:200]) from None


def build_plan(doc: dict, arrays: dict, at: str = "", depth: int = 0) -> Plan:
    """The Plan of one plan document (`at`: where it sits, for messages; `depth`: bodies it is inside)."""
    if depth > MAX_DEPTH:
        raise _bad(at.rstrip("."), f"bodies nest deeper than {MAX_DEPTH} levels")
    options = _options(doc, arrays, at)
    tensors = tuple(_spec(t, f"{at}tensors[{i}]", i) for i, t in enumerate(array(field(doc, "tensors", at), "tensors")))
    n_t = len(tensors)
    constants = {}
    raw = field(doc, "constants", at)
    if not isinstance(raw, dict):
        raise _bad(f"{at}constants", "expected an object")
    for i, key in raw.items():
        where = f"{at}constants[{i[:20]!r}]"
        if not i.isdigit() or int(i) >= n_t:
            raise _bad(where, f"not a tensor index (0..{n_t - 1})")
        a = strings(key, where) if isinstance(key, dict) and set(key) == {"__strings__", "shape"} \
            else decode({"__array__": key}, arrays, where)
        t = tensors[int(i)]
        if t.dtype == BFLOAT16 and a.dtype == np.dtype("V2"):
            a = a.view(BFLOAT16)  # npz keeps bfloat16 as 2-byte voids
        if t.kind != "const" or a.dtype != t.dtype or tuple(a.shape) != t.shape:
            raise _bad(where, f"'{t.name}' is {a.dtype}{list(a.shape)} in weights.npz, {t.kind} "
                              f"{t.dtype}{list(t.shape)} in plan.json")
        constants[int(i)] = a
    nodes = [_node(d, step, tensors, constants, options, arrays, f"{at}nodes[{step}]", depth)
             for step, d in enumerate(array(field(doc, "nodes", at), f"{at}nodes"))]
    n_n = len(nodes)
    events = []
    for k, e in enumerate(array(field(doc, "events", at), f"{at}events")):
        w = f"{at}events[{k}]"
        e = array(e, w, 5)
        events.append(SyncEvent(integer(e[0], f"{w}.id", 0, n_n * n_n), integer(e[1], f"{w}.record_after", 0, n_n - 1),
                                integer(e[2], f"{w}.wait_before", 0, n_n - 1), integer(e[3], f"{w}.src_stream", 0, n_n),
                                integer(e[4], f"{w}.dst_stream", 0, n_n)))
    ios = [[integer(i, f"{at}{key}[{k}]", 0, n_t - 1) for k, i in enumerate(array(field(doc, key, at), key))]
           for key in ("inputs", "outputs")]
    memory = _memory(field(doc, "memory", at), tensors, n_n, arrays, f"{at}memory")
    reason = field(doc, "single_stream_reason", at)
    return Plan(text(field(doc, "name", at), f"{at}name"), tensors, tuple(nodes), tuple(ios[0]), tuple(ios[1]),
                constants, options, memory=memory, events=tuple(events),
                single_stream_reason=text(reason, f"{at}single_stream_reason", optional=True))


def _node(d, step, tensors, constants, options, arrays, where, depth) -> PlanNode:
    n_t = len(tensors)
    name, op, domain = (text(field(d, k, where), f"{where}.{k}") for k in ("name", "op_type", "domain"))
    opset = integer(field(d, "opset", where), f"{where}.opset", 1, 1000)
    raw = field(d, "attrs", where)
    if not isinstance(raw, dict):
        raise _bad(f"{where}.attrs", "expected an object")
    attrs = {text(k, f"{where}.attrs"): decode(v, arrays, f"{where}.attrs.{k}") for k, v in raw.items()}
    ins = tuple(integer(i, f"{where}.inputs[{k}]", -1, n_t - 1) for k, i in enumerate(array(field(d, "inputs", where),
                                                                                              f"{where}.inputs")))
    outs = tuple(integer(o, f"{where}.outputs[{k}]", 0, n_t - 1)
                 for k, o in enumerate(array(field(d, "outputs", where), f"{where}.outputs")))
    engine = text(field(d, "engine", where), f"{where}.engine")
    if engine not in ENGINES:
        raise _bad(f"{where}.engine", f"{engine[:20]!r} is not one of {ENGINES}")
    stream = integer(field(d, "stream", where), f"{where}.stream", 0, 1 << 16)
    dynamic = flag(field(d, "dynamic", where), f"{where}.dynamic")
    alias = flag(field(d, "alias", where), f"{where}.alias")
    no_task = flag(d.get("no_task", False), f"{where}.no_task")
    try:
        kernel = lookup(op, domain, opset, name)
        if kernel.host is None and any(tensors[t].dtype == STRING for t in (*ins, *outs) if t >= 0):
            kernel = on_strings(kernel, name, opset)   # the compiler's rule (kernels/bind.node_kernel)
    except GEError as e:
        raise _bad(f"{where}.op_type", str(e)[:300]) from None
    launch = None
    if not dynamic:
        specs = [None if i < 0 else TensorSpec(tensors[i].shape, tensors[i].dtype) if tensors[i].is_static else None
                 for i in ins]
        values = [constants.get(i) if (i >= 0 and k in kernel.value_inputs) else None for k, i in enumerate(ins)]
        try:
            inferred, launch = prepare_launch(kernel, op, name, attrs, specs, values, opset, len(outs),
                                              options.aicore_num or 1)
        except GEError as e:
            raise _bad(where, f"{op} node '{name}' cannot be prepared: {str(e)[:300]}") from None
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, ZeroDivisionError, OverflowError,
                MemoryError) as e:
            raise _bad(where, f"{op} node '{name}': its attributes or inputs are not what the kernel takes "
                              f"({type(e).__name__}: {str(e)[:200]})") from None
        if (launch is None) != alias:
            what = "gives no task" if launch is None else "gives a task"
            raise _bad(where, f"{op} node '{name}': the kernel of this ge {what}, the file says otherwise; "
                              "compile the model again")
        for k, (o, spec) in enumerate(zip(outs, inferred)):
            t = tensors[o]
            if (t.dtype, t.shape) != (spec.dtype, spec.shape):
                raise _bad(f"{where}.outputs[{k}]", f"{op} node '{name}' computes {spec.dtype}{list(spec.shape)}, "
                                                    f"the file says tensor '{t.name}' is {t.dtype}{list(t.shape)}")
        if len(inferred) < len(outs):
            raise _bad(f"{where}.outputs", f"{op} node '{name}' has {len(inferred)} outputs, the file {len(outs)}")
    bodies = _bodies(d, op, domain, name, ins, dynamic, arrays, where, depth)
    try:   # the compiler's rule: Identity of a sequence runs on the host, other tensor kernels refuse one
        kernel = sequence.host_kernel(op, name, [tensors[t].value_kind for t in (*ins, *outs) if t >= 0], kernel)
    except GEError as e:
        raise _bad(where, str(e)[:300]) from None
    return PlanNode(step, name, op, domain, opset, attrs, ins, outs, kernel, launch, dynamic, engine, stream, no_task,
                    bodies)


def _bodies(d, op, domain, name, ins, dynamic, arrays, where, depth) -> tuple:
    """A control node's bodies: the ones its op has, each a plan checked as the outer one is; captured inputs
    are the node's last inputs, so their counts must fit in them."""
    raw = d.get("bodies", [])
    want = BODIES.get(op, ()) if domain == "" else (BODY,) if (op, domain) == (SUNK_OP, SUNK_DOMAIN) else ()
    got = [array(b, f"{where}.bodies[{k}]", 3) for k, b in enumerate(array(raw, f"{where}.bodies"))]
    attrs = [text(b[0], f"{where}.bodies[{k}].attribute") for k, b in enumerate(got)]
    if sorted(attrs) != sorted(want) or (want and not dynamic):
        raise _bad(f"{where}.bodies", f"{op} node '{name}' has bodies {attrs}; its op has {list(want)} "
                                      "(run on the host)")
    out, left = [], len(ins)
    for k, (attr, doc, captured) in enumerate(got):
        n = integer(captured, f"{where}.bodies[{k}].captured", 0, left)
        left -= n
        body = build_plan(doc, arrays, f"{where}.bodies[{k}].", depth + 1)
        if n > len(body.inputs):
            raise _bad(f"{where}.bodies[{k}]", f"{n} captured inputs, the body has {len(body.inputs)} inputs")
        out.append((attr, body, n))
    return tuple(out)


def _memory(m, tensors, n_n, arrays, where) -> MemoryPlan | None:
    if m is None:
        return None
    fields = array(field(m, "tensor_fields", where), f"{where}.tensor_fields")
    if fields != [f.name for f in dataclasses.fields(TensorMemory)]:
        raise _bad(f"{where}.tensor_fields", "not the fields of this ge's TensorMemory")
    raw_seg = field(m, "segments", where)
    if not isinstance(raw_seg, dict) or set(raw_seg) - set(SEGMENTS):
        raise _bad(f"{where}.segments", f"expected an object of {SEGMENTS[:4]} -> bytes")
    segments = {k: integer(v, f"{where}.segments.{k}", 0, 1 << 48) for k, v in raw_seg.items()}
    mems = []
    for i, t in enumerate(array(field(m, "tensors", where), f"{where}.tensors", len(tensors))):
        w = f"{where}.tensors[{i}]"
        index, name, segment, offset, nbytes, alias_of, first, last, part_of = array(t, w, len(fields))
        if integer(index, f"{w}.index") != i or text(name, f"{w}.name") != tensors[i].name:
            raise _bad(w, "does not describe the tensor of that index")
        if segment not in SEGMENTS:
            raise _bad(f"{w}.segment", f"{str(segment)[:20]!r} is not one of {SEGMENTS}")
        mems.append(TensorMemory(i, name, segment, optional_int(offset, f"{w}.offset", 0, 1 << 48),
                                 optional_int(nbytes, f"{w}.bytes", 0, 1 << 48),
                                 text(alias_of, f"{w}.alias_of", optional=True),
                                 optional_int(first, f"{w}.first", -1, n_n),
                                 optional_int(last, f"{w}.last", -1, 1 << 62),
                                 text(part_of, f"{w}.part_of", optional=True)))
    workspaces = []
    for s, ws in enumerate(array(field(m, "workspaces", where), f"{where}.workspaces", n_n)):
        w, planned = f"{where}.workspaces[{s}]", []
        for k, x in enumerate(array(ws, w)):
            o, b = array(x, f"{w}[{k}]", 2)
            planned.append((integer(o, f"{w}[{k}].offset", 0, 1 << 48), integer(b, f"{w}[{k}].bytes", 0, 1 << 48)))
        workspaces.append(tuple(planned))
    raw = field(m, "stats", where)
    if not isinstance(raw, dict):
        raise _bad(f"{where}.stats", "expected an object")
    try:
        stats = {k: decode(v, arrays, f"{where}.stats.{k}") for k, v in raw.items()}
        stats["totals"] = dict(stats.get("totals") or {})
        stats = MemoryStats(**{k: stats[k] for k in (f.name for f in dataclasses.fields(MemoryStats))})
    except (KeyError, TypeError, ValueError) as e:
        raise _bad(f"{where}.stats", f"{type(e).__name__}: {str(e)[:100]}") from None
    if not all(isinstance(getattr(stats, k), (int, float)) and math.isfinite(getattr(stats, k))
               for k in ("feature_map_bytes", "no_reuse_bytes", "lower_bound_bytes", "seconds")):
        raise _bad(f"{where}.stats", "sizes must be finite numbers")
    fixed = frozenset(integer(s, f"{where}.fixed_workspaces", 0, n_n - 1)
                      for s in array(m.get("fixed_workspaces", []), f"{where}.fixed_workspaces"))
    return MemoryPlan(tuple(mems), tuple(workspaces), segments, stats, fixed)

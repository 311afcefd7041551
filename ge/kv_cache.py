"""The KV cache in place (Options.kv_cache_max_len = M, docs/kv-cache.md): a decoder export's graph rewritten
before the pipeline so that its past keys/values are one buffer each, fed back run after run, and a step
writes only its new rows (GE's variable memory with ge.exec.outputReuseMemIndexes: an output living in the
input that carries it to the next run; vLLM's KV cache sized once for the longest sequence).

An export of a decoder step (transformers' GPT-2 with past, torch.onnx) reads `past_key_values.i.key`
[batch, heads, past, head] and returns `present.i.key = Concat(past, new, axis=2)`: every step copies the
whole past into a new present, per layer, key and value.

Step 1: the pairs: each graph output made by a 2-input Concat on axis 2 of a 4-D tensor whose first input is
        a graph input (directly or through a 1-input Concat / Identity): (past input, present output, Concat).
        The attention mask (the int input with the present's length axis) and the new tokens (the other
        2-D int input) give the lengths: total = mask.shape[axis], new = ids.shape[1], past = total - new.
Step 2: each past input becomes the cache [batch, heads, M, head]; where the graph read its shape (the
        exporter's position ids and causal-mask slices read Shape(past)) it reads [batch, heads, total - new,
        head] computed from the mask and the ids.
Step 3: the Concat becomes ge::KVCacheAppend(cache, new, mask): `present` as the graph sees it ([batch,
        heads, total, head]), no task, the cache's buffer (ge/kernels/kv_cache.py); the present outputs leave
        the graph's outputs (the caller's cache holds them). fuse_attention then makes ge::Attention read it
        and kv_cache_attention turns that into ge::CachedAttention, which writes the new rows.
`check` (after the passes): every reader of a KVCacheAppend is a CachedAttention, else GEError naming it
(the buffer's rows are max_len apart, which no other kernel reads).
"""
from __future__ import annotations

import numpy as np

from .errors import GEError

PASSES_THROUGH = ("Identity", "Concat")   # a 1-input Concat (torch.onnx writes one) or an Identity
PAST_LENGTH = "past_length"   # kv_cache_static's input: the tokens the cache holds, int64 [1]
PAST_SYMBOL = "kv_past"       # its value as fold_symbolic carries it (ge/passes/kv_cache_pad.py)


def _source(v, inputs):
    while v not in inputs and v.producer is not None and v.producer.op_type in PASSES_THROUGH \
            and len(v.producer.inputs) == 1 and not v.producer.domain:
        v = v.producer.inputs[0]
    return v if v in inputs else None


def _pairs(graph):
    inputs = set(graph.inputs)
    pairs = []
    for y in graph.outputs:
        c = y.producer
        if c is None or c.op_type != "Concat" or c.domain or len(c.inputs) != 2 or c.attrs.get("axis") not in (2, -2):
            continue
        x = _source(c.inputs[0], inputs)
        if x is not None and x.shape is not None and len(x.shape) == 4:
            pairs.append((x, y, c))
    return pairs


def _lengths(graph, pairs):
    """(mask, ids): the attention mask [batch, past + new] and the new tokens [batch, new], else GEError."""
    if not pairs:
        raise GEError("kv_cache_max_len: no output of this model is present = Concat(past input, new rows, "
                      "axis=2) (a decoder step export with past_key_values): nothing to keep in place")
    total = pairs[0][1].shape[2] if pairs[0][1].shape is not None else None
    ints = [v for v in graph.inputs if v.dtype is not None and v.dtype.kind in "iu" and v.shape is not None
            and len(v.shape) == 2]
    mask = next((v for v in ints if total is not None and v.shape[1] == total), None)
    mask = mask or next((v for v in ints if "mask" in v.name), None)
    ids = [v for v in ints if v is not mask]
    if mask is None or len(ids) != 1:
        raise GEError("kv_cache_max_len: the cache's rows follow from an attention mask [batch, past + new] and "
                      f"the new tokens [batch, new] (2-D integer inputs); this model's are "
                      f"{[v.name for v in ints] or 'none'}")
    return mask, ids[0]


def static_shapes(graph, max_len: int) -> list:
    """Options.input_shape entries for kv_cache_static: the new tokens [batch, new], the mask [batch, max_len]
    (batch and new: the ones input_shape gave, else 1; a prefill plan takes new > 1, e.g. as a dims gear)."""
    mask, ids = _lengths(graph, _pairs(graph))
    batch, new = (d if isinstance(d, int) else 1 for d in ids.shape)
    if new > max_len:
        raise GEError(f"kv_cache_static: input '{ids.name}' brings {new} tokens a step; the cache has "
                      f"{max_len} rows (kv_cache_max_len)")
    return [(ids.name, (batch, new)), (mask.name, (batch, max_len))]


def in_place(graph, max_len: int, static: bool = False):
    """Rewrite `graph` (ge.ir.Graph) for a cache of max_len rows; returns it. `static`: the past length is
    the PAST_LENGTH input (a value), the shapes are max_len's (kv_cache_pad pads what reads it as a size)."""
    # Step 1: the pairs and the length inputs
    pairs = _pairs(graph)
    mask, ids = _lengths(graph, pairs)
    layers = []
    for x, y, c in pairs:
        b, h, _, d = x.shape
        if not isinstance(h, int) or not isinstance(d, int):
            raise GEError(f"kv_cache_max_len: input '{x.name}' {list(x.shape)} needs static heads and head size")
        layers.append((x.name, y.name, h, d))
    # Step 2: the caches; their shapes as the graph read them
    at = [0]

    def node(op, ins, attrs=None, size=1):   # int64 shape arithmetic, `size` elements
        n = graph.add_node(op, ins, 1, attrs, graph.fresh_name(f"kv_cache/{op}"), index=at[0])
        at[0] += 1
        n.outputs[0].dtype, n.outputs[0].shape = np.dtype(np.int64), (size,)
        return n.outputs[0]

    def const(name, values):
        return graph.add_const(f"kv_cache/{name}", np.array(values, np.int64))

    zero, one, two, three, four = (const(str(k), [k]) for k in range(5))
    if static:   # the past length as data; its symbol tells fold_symbolic which sizes it makes
        if any(v.name == PAST_LENGTH for v in graph.inputs):
            raise GEError(f"kv_cache_static: the model already has an input named '{PAST_LENGTH}'")
        past = graph.add_input(PAST_LENGTH, np.dtype(np.int64), (1,))
        past.sym = (PAST_SYMBOL,)
    else:
        tot = node("Slice", [node("Shape", [mask], size=2), one, two])
        past = node("Sub", [tot, node("Slice", [node("Shape", [ids], size=2), one, two])])
    for x, y, c in pairs:
        x.shape = (x.shape[0], x.shape[1], max_len, x.shape[3])
        mine = len(x.users)   # the readers before this step's own Shape of the cache
        sx = node("Shape", [x], size=4)
        logical = node("Concat", [node("Slice", [sx, zero, two], size=2), past, node("Slice", [sx, three, four])],
                       {"axis": 0}, size=4)
        chain, seen = [x], []
        while chain:
            v = chain.pop()
            for r in list(v.users[:mine] if v is x else v.users):
                if r is c or r in seen:
                    continue
                seen.append(r)
                if r.op_type in PASSES_THROUGH and len(r.inputs) == 1 and not r.domain:
                    chain.append(r.outputs[0])
                elif r.op_type == "Shape" and not r.attrs:
                    graph.replace_all_uses_with(r.outputs[0], logical)
                else:
                    raise GEError(f"kv_cache_max_len: node '{r.name}' ({r.op_type}) reads past input "
                                  f"'{x.name}' itself; only its shape and the Concat making '{y.name}' may")
        # Step 3: present as a view of the cache
        graph.outputs = [v for v in graph.outputs if v is not y]
        graph.opsets.setdefault("ge", 1)
        app = graph.add_node("KVCacheAppend", [x, c.inputs[1], mask] + ([past] if static else []), 1, {"axis": 1},
                             graph.fresh_name(f"{c.name}/kv_cache"), "ge", index=graph.nodes.index(c))
        out = app.outputs[0]   # present's declared shape [batch, heads, total, head] (symbolic: no infer runs)
        out.dtype, out.shape = x.dtype, (x.shape[0], x.shape[1], y.shape[2] if y.shape else total, x.shape[3])
        graph.replace_all_uses_with(y, out)
        graph.erase_node(c)
        for r in reversed(seen):   # the 1-input Concats / Identities and Shapes left unread
            if r in graph.nodes and not any(o.users or o in graph.outputs for o in r.outputs):
                graph.erase_node(r)
    graph.kv_cache = {"max_len": max_len, "layers": layers, "mask": mask.name, "ids": ids.name,
                      "past": PAST_LENGTH if static else None, "past_symbol": PAST_SYMBOL,
                      "padded_past": max_len - (ids.shape[1] if isinstance(ids.shape[1], int) else 1)}
    return graph


def check(graph) -> None:
    """After the passes: the caches are read by ge::CachedAttention only."""
    for n in graph.nodes:
        if n.op_type != "KVCacheAppend" or n.domain != "ge":
            continue
        for r in n.outputs[0].users:
            if r.op_type != "CachedAttention" or r.domain != "ge":
                raise GEError(f"kv_cache_max_len: node '{r.name}' ({r.op_type}) reads the cache '{n.outputs[0].name}' "
                              "but only an attention ge fuses (ge::CachedAttention) reads a cache in place; this "
                              "export's attention did not fuse (run it without kv_cache_max_len)")


# -- the caller's side: which inputs are caches, and the cache object Session.run(kv_cache=...) takes ------

def layout(plan) -> dict | None:
    """{max_len, caches: {input name: (heads, head)}, mask, ids, past, dtype} of a plan compiled with
    kv_cache_max_len (past: kv_cache_static's past-length input, else None)."""
    m = plan.options.kv_cache_max_len
    if not m:
        return None
    ins = [plan.tensors[i] for i in plan.inputs]
    caches = {t.name: (t.shape[1], t.shape[3]) for t in ins
              if t.dtype.kind == "f" and len(t.shape) == 4 and t.shape[2] == m}
    ints = [t for t in ins if t.dtype.kind in "iu" and len(t.shape) == 2]
    mask = next((t.name for t in ints if "mask" in t.name), None)
    ids = next((t.name for t in ints if t.name != mask), None)
    past = PAST_LENGTH if plan.options.kv_cache_static else None
    return {"max_len": m, "caches": caches, "mask": mask, "ids": ids, "past": past,
            "dtype": ins[0].dtype if not caches else next(t.dtype for t in ins if t.name in caches)}


def check_feeds(lay: dict, feeds: dict, past: int | None = None) -> int:
    """The new-token count of a step; InputError naming the input when the step does not fit the cache.
    `past`: the tokens a ge.KVCache holds (its mask is the logical one, [batch, past + new]); None: the raw
    idiom (the caller's cache arrays, and with kv_cache_static the padded mask and past_length)."""
    from .errors import InputError
    if past is None:
        _check_arrays(lay, feeds)
        if lay["past"]:
            return _check_static(lay, feeds)
    ids, mask = feeds.get(lay["ids"]), feeds.get(lay["mask"])
    if ids is None or mask is None:
        raise InputError(f"missing input '{lay['ids'] if ids is None else lay['mask']}' (a step of a model "
                         "compiled with kv_cache_max_len needs the new tokens and the attention mask)")
    ids, mask = np.asarray(ids), np.asarray(mask)
    if ids.ndim != 2 or mask.ndim != 2:
        raise InputError(f"inputs '{lay['ids']}' {list(ids.shape)} and '{lay['mask']}' {list(mask.shape)} must be "
                         "2-D [batch, tokens]")
    new, total = ids.shape[1], mask.shape[1]
    if total > lay["max_len"]:
        raise InputError(f"input '{lay['mask']}' covers {total} tokens (past {total - new} + {new} new): more "
                         f"than the cache's {lay['max_len']} rows (kv_cache_max_len)")
    if past is not None and total != past + new:
        raise InputError(f"input '{lay['mask']}' has {total} columns; the cache holds {past} tokens and "
                         f"'{lay['ids']}' brings {new}: it needs {past + new}")
    if total < new or mask.shape[0] != ids.shape[0]:
        raise InputError(f"input '{lay['mask']}' {list(mask.shape)} does not cover '{lay['ids']}' {list(ids.shape)}")
    return new


def _check_arrays(lay: dict, feeds: dict) -> None:
    """The caller's cache arrays are written in place: a copy (an array the runtimes cannot bind, GE's
    zero-copy rule) would lose the step's rows, so it is refused."""
    from .errors import InputError
    from .plan import zero_copy_aligned
    for name, (heads, head) in lay["caches"].items():
        a = feeds.get(name)
        if not isinstance(a, np.ndarray) or a.dtype != lay["dtype"] or a.ndim != 4 or a.shape[1:] != (
                heads, lay["max_len"], head):
            continue   # the runtime names what does not fit
        if not (a.flags.c_contiguous and a.flags.writeable and zero_copy_aligned(a)):
            raise InputError(f"input '{name}': a KV cache array is written in place, so it must be C-contiguous, "
                             "writable and 32-byte aligned (ge.KVCache's are; ge.plan.aligned_empty makes one)")


def _check_static(lay: dict, feeds: dict) -> int:
    """kv_cache_static's raw feeds: tokens [batch, 1], the mask padded to max_len, 0 <= past_length < max_len."""
    from .errors import InputError
    m, name = lay["max_len"], lay["past"]
    ids, mask, past = (feeds.get(k) for k in (lay["ids"], lay["mask"], name))
    for k, v in ((lay["ids"], ids), (lay["mask"], mask), (name, past)):
        if v is None:
            raise InputError(f"missing input '{k}' (a kv_cache_static step needs the new token, the mask padded "
                             f"to {m} columns and the past length; ge.KVCache feeds them)")
    ids, mask, past = np.asarray(ids), np.asarray(mask), np.asarray(past)
    if mask.ndim != 2 or mask.shape[1] != m:
        raise InputError(f"input '{lay['mask']}' {list(mask.shape)}: a kv_cache_static step takes the mask padded "
                         f"to the cache's {m} columns (0 beyond past + new)")
    new = int(ids.shape[1]) if ids.ndim == 2 else 1
    if past.size != 1 or past.dtype.kind not in "iu" or not 0 <= int(past.reshape(-1)[0]) <= m - new:
        raise InputError(f"input '{name}' {past.reshape(-1)[:4].tolist()}: one integer in 0..{m - new} (the "
                         f"tokens the cache holds; with {new} new a past of more than {m - new} does not fit "
                         f"kv_cache_max_len {m})")
    return new

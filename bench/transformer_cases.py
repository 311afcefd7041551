"""What bench/transformers.py times: the exports' feeds and sessions, the attention subgraph alone, a KV
cache step and onnxruntime's generation loop. Kept apart so the script holds only its modes and tables."""
from __future__ import annotations

import numpy as np

import ge
import ge.passes
from ge import exports

# fuse_activation / recognize_activations (bias, GELU epilogues) stay on in "unfused": these are the
# transformer fusions whose worth the unfused column measures.
TRANSFORMER_FUSIONS = ("fuse_attention", "fuse_skip_layer_norm")


def vocab(name: str) -> int:
    """The tiny fixtures embed 100 tokens (tools/make_transformer_fixtures.py); the others BERT's or GPT-2's."""
    return 100 if "tiny" in name else 30522 if name.startswith("bert") else 50257


def feeds(name: str, seq: int) -> dict:
    if name.startswith("bert"):
        return exports.bert_feeds(1, seq, vocab=vocab(name))
    return exports.gpt2_feeds(1, seq, vocab=vocab(name))


def step_sizes(model) -> tuple[int, int, int]:
    """(layers, heads, head size) of a decoder step export, read off its past inputs [batch, heads, past, head]."""
    pasts = [i for i in model.graph.input if i.name.startswith("past_key_values.") and i.name.endswith(".key")]
    dims = pasts[0].type.tensor_type.shape.dim
    return len(pasts), dims[1].dim_value, dims[3].dim_value


def session(model, column: str, shapes: dict | None = None) -> ge.Session:
    """ge as a column runs it, one thread: "replayed" (runtime_v2 as exported, the default capture_limit),
    "host" (runtime_v2, capture_limit 0: every run host-driven), "unfused" (replayed without the transformer
    fusions), "fixed" (every input shape fixed to `shapes`: a static plan, runtime_v1 under "auto")."""
    opts = {"thread_budget": 1}
    if column == "host":
        opts["capture_limit"] = 0
    if column == "unfused":
        opts["disabled_passes"] = TRANSFORMER_FUSIONS
    if column == "fixed":
        sess = ge.Session(model, options=ge.Options(**opts, input_shape={k: v.shape for k, v in shapes.items()}))
        assert sess.runtime == "v1", sess.stats()["runtime_reason"]
        return sess
    sess = ge.Session(model, runtime="v2", options=ge.Options(**opts))
    return sess


def static_session(model, shapes: dict, disabled=()) -> ge.Session:
    """runtime_v1 at the feeds' shapes (ge.byop traces a static plan on one thread). BERT's exports fold to a
    static plan in more constant-folding rounds than the pipeline's MAX_FOLD_ROUNDS (ge/passes/__init__.py)."""
    text = ";".join(f"{k}:{','.join(map(str, v.shape))}" for k, v in shapes.items())
    rounds, ge.passes.MAX_FOLD_ROUNDS = ge.passes.MAX_FOLD_ROUNDS, 32
    try:
        return ge.Session(model, runtime="v1", options=ge.Options(thread_budget=1, input_shape=text,
                                                                 disabled_passes=tuple(disabled)))
    finally:
        ge.passes.MAX_FOLD_ROUNDS = rounds


def sdpa_model(seq: int, heads: int = 12, dim: int = 64):
    """The attention subgraph as torch.onnx.export writes scaled_dot_product_attention (q, k, v [1, seq,
    heads, dim], an additive mask, the NaN guard after the Softmax): what fuse_attention matches."""
    from onnx import TensorProto, helper, numpy_helper
    c = np.float32(dim ** -0.25)
    mk = helper.make_node
    nodes = [mk("Transpose", ["q"], ["qt"], perm=[0, 2, 1, 3]), mk("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
             mk("Transpose", ["v"], ["vt"], perm=[0, 2, 1, 3]), mk("Mul", ["qt", "c"], ["qs"]),
             mk("Mul", ["kt", "c"], ["ks"]), mk("MatMul", ["qs", "ks"], ["s"]), mk("Add", ["s", "mask"], ["a"]),
             mk("Softmax", ["a"], ["p"], axis=-1), mk("IsNaN", ["p"], ["n"]), mk("Where", ["n", "zero", "p"], ["pg"]),
             mk("MatMul", ["pg", "vt"], ["o"]), mk("Transpose", ["o"], ["y"], perm=[0, 2, 1, 3])]
    x = [1, seq, heads, dim]
    g = helper.make_graph(nodes, "sdpa", [helper.make_tensor_value_info(n, TensorProto.FLOAT, x) for n in "qkv"] +
                          [helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 1, seq])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, x)],
                          [numpy_helper.from_array(c, "c"), numpy_helper.from_array(np.float32(0), "zero")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def sdpa_feeds(seq: int, heads: int = 12, dim: int = 64) -> dict:
    rng = np.random.default_rng(0)
    out = {n: rng.standard_normal((1, seq, heads, dim), np.float32) for n in "qkv"}
    out["mask"] = np.zeros((1, 1, 1, seq), np.float32)
    return out


def kv_step(name: str, model, sessions: dict, ort, past: int):
    """One token on a `past`-row KV cache (ge.KVCache) for each of `sessions` {label: ge.Session} and the same
    step on onnxruntime fed the past: checked equal, then {label: fn, "ort": fn} repeating that step (the
    cache's length set back each call: the same step again) and the past bytes each writes a step
    (onnxruntime's Concat every present, ge the new rows only; ge copies no cache: its copied_inputs grows by
    ids and mask only; the rows the step writes are read back from the caches: the new token's only)."""
    layers, heads, head = step_sizes(model)
    fed = exports.gpt2_step_feeds(layers, heads, head, past, vocab=vocab(name))
    step = {"input_ids": fed["input_ids"], "attention_mask": fed["attention_mask"]}
    want = ort.run(None, fed)[0]
    fns = {}
    for label, sess in sessions.items():
        cache = ge.KVCache(sess, 1)
        for k, a in cache.arrays.items():
            a[:, :, :past] = fed[k]
        cache.length = past
        (logits,) = sess.run(None, step, kv_cache=cache)
        np.testing.assert_allclose(logits, want, rtol=1e-3, atol=1e-3)
        copied = sess.stats().get("copied_inputs", 0)

        def ge_step(sess=sess, cache=cache):
            cache.length = past
            sess.run(None, step, kv_cache=cache)
        ge_step()
        before = {k: a.copy() for k, a in cache.arrays.items()}
        for k, a in before.items():
            a[:, :, past] += 1   # the step's row made stale, so rewriting it shows
        for k, a in before.items():
            cache.arrays[k][...] = a
        ge_step()
        written = {int(r) for k, a in cache.arrays.items() for r in np.nonzero((a != before[k]).any(axis=(0, 1, 3)))[0]}
        assert written == {past}, f"{label} wrote cache rows {sorted(written)}, not only the new token's ({past})"
        assert sess.stats().get("copied_inputs", 0) - copied <= 2 * 2, f"{label} copied a cache"
        fns[label] = ge_step
    moved = {"ge": 2 * layers * heads * head * 4, "ort": 2 * layers * heads * (past + 1) * head * 4}
    return {**fns, "ort": lambda: ort.run(None, fed)}, moved


def ort_generate(ort, model, ids, new: int) -> list[int]:
    """Greedy tokens from onnxruntime in a Python loop, each step's presents fed back as the next past."""
    layers, heads, head = step_sizes(model)
    past = {f"past_key_values.{i}.{kv}": np.zeros((1, heads, 0, head), np.float32)
            for i in range(layers) for kv in ("key", "value")}
    names = [o.name for o in ort.get_outputs()]
    mask, out = np.ones((1, ids.shape[1]), np.int64), []
    for _ in range(new):
        r = ort.run(None, {"input_ids": ids, "attention_mask": mask, **past})
        tok = r[0][:, -1].argmax(-1)
        out.append(int(tok[0]))
        past = {n.replace("present", "past_key_values"): v for n, v in zip(names[1:], r[1:])}
        ids, mask = tok[:, None].astype(np.int64), np.concatenate([mask, np.ones((1, 1), np.int64)], axis=1)
    return out

"""ge.generate: tokens from a decoder step export, one step a token, its past keys/values in place (docs/kv-cache.md).

    out = ge.generate("gpt2_step.onnx", [[464, 3290], [40]], max_new_tokens=32, top_k=50, seed=0)
    out.tokens, out.tokens_per_second

Step 1: the session: the one given (compiled with Options(kv_cache_max_len)), else one compiled from the model
        with a cache of prompt + max_new_tokens rows (or max_len): static steps where the export allows
        (Options.kv_cache_static: one plan for every past length, and a prefill plan of the prompt's length
        beside it as a dims gear over the new tokens, sharing its weights; runtime_v1), else (logged) steps
        shaped by their past on runtime_v2 (the mask grows a column a step).
Step 2: the prompts: a 2-D array, or sequences of different lengths left-padded with pad_token_id, the
        padding masked out (attention_mask 0); the export's position ids are its own (transformers' GPT-2 export
        counts them from the past length, so a padded sequence's positions start later, as in onnxruntime
        fed the same padded batch).
Step 3: the loop: the prompt in steps of the token counts the session takes (a prefill gear: one step;
        a one-token plan: a token a step; shaped by the past: one step; or through prompt_session), then one
        token a step; each step's last logits -> a token (greedy, or sampled: temperature, top-k, then top-p
        on what is left, from numpy's Generator(seed)); a sequence that picks a stop token is finished: its
        later tokens are pad_token_id and dropped; all finished or max_new_tokens -> stop.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from .errors import InputError

log = logging.getLogger("ge")


@dataclass
class Generation:
    tokens: list = field(default_factory=list)       # per sequence: prompt + new tokens (no padding)
    new_tokens: list = field(default_factory=list)   # per sequence: the new tokens (a stop token included)
    seconds: float = 0.0                             # the whole loop, prompt step included
    prompt_seconds: float = 0.0                      # the prompt's steps
    steps: int = 0                                   # the steps of new tokens
    prompt_steps: int = 1                            # the steps the prompt took
    static: bool = False                             # the steps ran one static plan (Options.kv_cache_static)
    fallback: str | None = None                      # why a model's steps were not static (ge.generate's log)

    @property
    def tokens_per_second(self) -> float:
        """New tokens of all sequences over the loop's time."""
        return sum(map(len, self.new_tokens)) / self.seconds if self.seconds > 0 else 0.0


def pad_prompts(input_ids, pad_token_id: int = 0) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(ids [batch, longest], mask, lengths): ragged prompts left-padded, the padding masked."""
    if isinstance(input_ids, np.ndarray):
        if input_ids.ndim == 1:
            input_ids = input_ids[None]
        rows = [list(r) for r in input_ids]
    else:
        rows = [list(r) for r in input_ids]
        if rows and not isinstance(rows[0], list) and np.ndim(rows[0]) == 0:
            rows = [rows]
    if not rows or any(len(r) == 0 for r in rows):
        raise InputError("input_ids: give one or more non-empty token sequences")
    try:
        rows = [[int(t) for t in r] for r in rows]
    except (TypeError, ValueError):
        raise InputError("input_ids: token ids must be integers") from None
    n = max(map(len, rows))
    ids = np.full((len(rows), n), pad_token_id, np.int64)
    mask = np.zeros((len(rows), n), np.int64)
    for b, r in enumerate(rows):
        ids[b, n - len(r):], mask[b, n - len(r):] = r, 1
    return ids, mask, [len(r) for r in rows]


def pick(logits: np.ndarray, rng, do_sample: bool, temperature: float = 1.0, top_k: int = 0,
         top_p: float = 1.0) -> np.ndarray:
    """One token per row of logits [batch, vocab]: argmax, or a sample after temperature, top-k, top-p."""
    if not do_sample:
        return logits.argmax(-1).astype(np.int64)
    x = logits.astype(np.float64) / temperature
    if 0 < top_k < x.shape[-1]:
        kth = np.partition(x, -top_k, axis=-1)[:, -top_k][:, None]
        x = np.where(x < kth, -np.inf, x)
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = np.empty(len(p), np.int64)
    for b, row in enumerate(p):
        order = np.argsort(-row, kind="stable")
        sorted_p = row[order]
        if top_p < 1.0:   # the smallest set whose mass reaches top_p (the most likely token always kept)
            keep = np.cumsum(sorted_p) - sorted_p < top_p
            sorted_p = np.where(keep, sorted_p, 0.0)
        c = np.cumsum(sorted_p)
        out[b] = order[min(int(np.searchsorted(c, rng.random() * c[-1], side="right")), len(c) - 1)]
    return out


def _check(max_new_tokens, temperature, top_k, top_p) -> None:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 1:
        raise InputError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    if not temperature > 0:
        raise InputError(f"temperature must be > 0, got {temperature!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 0:
        raise InputError(f"top_k must be an integer >= 0 (0: off), got {top_k!r}")
    if not 0 < top_p <= 1:
        raise InputError(f"top_p must be in (0, 1], got {top_p!r}")


def generate(model, input_ids, max_new_tokens: int, *, do_sample: bool | None = None, temperature: float = 1.0,
             top_k: int = 0, top_p: float = 1.0, seed: int | None = None, stop_tokens=(), pad_token_id: int = 0,
             max_len: int | None = None, runtime: str = "auto", options=None, one_token_steps: bool = False,
             static_steps: bool | None = None, prompt_session=None) -> Generation:
    """Greedy (default) or sampled (do_sample, or top_k / top_p / temperature given) tokens; see the module doc.
    A model given: static steps (Options.kv_cache_static: one plan for every past length, the prompt through a
    prefill plan of its length beside it, dims gears on runtime_v1) where the export allows, else (logged,
    `Generation.fallback` says why) steps shaped by their past on runtime_v2; `static_steps=True` refuses the
    fallback, False asks for the steps shaped by their past. `one_token_steps`: the static step alone, the
    prompt a token a step. A session given runs as compiled: a kv_cache_static session takes the prompt in
    chunks of the token counts its gears have (or a token a step), or through `prompt_session` (the same model
    compiled with the same kv_cache_max_len, without kv_cache_static)."""
    from .api import Session
    from .kv_state import KVCache
    _check(max_new_tokens, temperature, top_k, top_p)
    do_sample = (top_k > 0 or top_p < 1 or temperature != 1.0) if do_sample is None else bool(do_sample)
    stops = {int(t) for t in np.atleast_1d(np.asarray(stop_tokens, np.int64))} if np.size(stop_tokens) else set()
    # Step 2
    ids, mask, lengths = pad_prompts(input_ids, pad_token_id)
    batch, n = ids.shape
    # Step 1
    fallback = None
    if isinstance(model, Session):
        sess = model
        if sess._kv is None:
            raise InputError("generate: this session was compiled without Options(kv_cache_max_len=N); give the "
                             "model itself, or compile with it")
    else:
        sess, fallback = _session(model, batch, n, max_len or n + max_new_tokens, runtime, options,
                                  one_token_steps, static_steps)
    if n + max_new_tokens - 1 > sess._kv["max_len"]:
        raise InputError(f"input_ids: {n} prompt tokens + {max_new_tokens} new need "
                         f"{n + max_new_tokens - 1} cache rows; the cache has {sess._kv['max_len']} (max_len)")
    _check_prompt_session(prompt_session, sess)
    chunks = [n] if prompt_session is not None else prompt_chunks(n, step_sizes(sess, batch))
    cache = KVCache(sess, batch)
    ids_name, mask_name = sess._kv["ids"], sess._kv["mask"]
    rng = np.random.default_rng(seed)
    out = Generation(new_tokens=[[] for _ in range(batch)], fallback=fallback, prompt_steps=len(chunks),
                     static=bool(sess._kv["past"]))
    done = np.zeros(batch, bool)
    # Step 3
    t0 = time.perf_counter()
    at = 0
    for size in chunks:   # the prompt: through prompt_session (the cache's arrays written in place), or in chunks
        if prompt_session is not None:
            logits = prompt_session.run(None, {ids_name: ids, mask_name: mask, **cache.arrays})[0]
            cache.advance(n)
        else:
            logits = sess.run(None, {ids_name: ids[:, at:at + size], mask_name: mask[:, :at + size]},
                              kv_cache=cache)[0]
        at += size
    out.prompt_seconds = time.perf_counter() - t0
    full_mask = mask
    for step in range(max_new_tokens):
        if step:
            logits = sess.run(None, {ids_name: step_ids, mask_name: full_mask}, kv_cache=cache)[0]
        tok = pick(logits[:, -1], rng, do_sample, temperature, top_k, top_p)
        for b in range(batch):
            if not done[b]:
                out.new_tokens[b].append(int(tok[b]))
                done[b] = int(tok[b]) in stops
        out.steps = step + 1
        if done.all() or step == max_new_tokens - 1:
            break
        tok = np.where(done, pad_token_id, tok)
        step_ids = tok[:, None].astype(np.int64)
        full_mask = np.concatenate([full_mask, np.ones((batch, 1), np.int64)], axis=1)
    out.seconds = time.perf_counter() - t0
    out.tokens = [list(ids[b, n - lengths[b]:]) + out.new_tokens[b] for b in range(batch)]
    out.tokens = [[int(t) for t in r] for r in out.tokens]
    return out


def _session(model, batch: int, n: int, rows: int, runtime: str, options, one_token_steps: bool,
             static_steps: bool | None):
    """(session, fallback reason or None) for a model: static steps where the export allows (a prefill gear
    of the prompt's n tokens beside the one-token step, on runtime_v1), else steps shaped by their past."""
    from .api import Session
    from .errors import GEError
    from .options import as_options
    opts = as_options(options).replace(kv_cache_max_len=rows)
    if static_steps is False and not one_token_steps:
        return Session(model, runtime, opts), None
    try:
        prefill = n if not one_token_steps and runtime in ("auto", "v1") else 1   # v2 runs no gears
        return Session(model, runtime, static_options(model, batch, prefill, rows, opts)), None
    except (GEError, InputError) as e:
        if static_steps or one_token_steps:
            raise
        reason = str(e).split("\n")[0]
        log.warning("generate: no static step plan for this export (%s); its steps run shaped by their past on "
                    "runtime_v2", reason)
        return Session(model, runtime, opts), reason


def static_options(model, batch: int, prefill: int, rows: int, options=None):
    """The Options ge.generate compiles a model's static steps with: kv_cache_static with a cache of `rows`,
    the one-token step and (prefill > 1) a prefill plan of `prefill` tokens as dims gears over the token
    input's length (one weight image, one feature map: runtime_v1/gears.py)."""
    from .options import as_options
    ids = _token_input(model)
    opts = as_options(options).replace(kv_cache_max_len=rows, kv_cache_static=True)
    if prefill > 1:
        return opts.replace(input_shape=f"{ids}:{batch},-1", dynamic_dims=f"1;{prefill}")
    return opts.replace(input_shape=f"{ids}:{batch},1")


def step_sizes(sess, batch: int) -> set | None:
    """The new-token counts a session's step takes at `batch` (its gears' or its fixed shape's); None: any."""
    name = sess._kv["ids"]
    plans = sess.gear_plans.plans.values() if sess.gear_plans is not None else [sess.plan]
    sizes = set()
    for plan in plans:
        shape = next(plan.tensors[i].shape for i in plan.inputs if plan.tensors[i].name == name)
        if not all(isinstance(d, int) for d in shape):
            return None
        if shape[0] == batch:
            sizes.add(shape[1])
    return sizes


def prompt_chunks(n: int, sizes: set | None) -> list[int]:
    """The prompt's n tokens as steps of the sizes a session takes, the largest first (sizes None: one step)."""
    if sizes is None:
        return [n]
    out = []
    while n:
        fit = [s for s in sizes if s <= n]
        if not fit:
            raise InputError(f"input_ids: the session's steps take {sorted(sizes)} tokens at this batch; "
                             f"{n} prompt tokens left cannot be cut into them")
        out.append(max(fit))
        n -= out[-1]
    return out


def _check_prompt_session(prompt, sess) -> None:
    """A prompt session writes the step session's cache: the same caches and rows, its shapes free."""
    if prompt is None:
        return
    kv = getattr(prompt, "_kv", None)
    if kv is None or kv["past"] or kv["max_len"] != sess._kv["max_len"] or kv["caches"] != sess._kv["caches"] \
            or (kv["ids"], kv["mask"]) != (sess._kv["ids"], sess._kv["mask"]):
        raise InputError("generate: prompt_session must be the same model compiled with the same "
                         f"kv_cache_max_len ({sess._kv['max_len']}) and without kv_cache_static")


def _token_input(model) -> str:
    """The name of a decoder step export's token input (its 2-D int64 input that is not the mask)."""
    import onnx
    proto = onnx.load(model, load_external_data=False) if isinstance(model, (str, bytes)) or hasattr(
        model, "__fspath__") else model
    ints = [i.name for i in getattr(getattr(proto, "graph", None), "input", [])
            if i.type.tensor_type.elem_type == onnx.TensorProto.INT64 and len(i.type.tensor_type.shape.dim) == 2]
    mask = next((n for n in ints if "mask" in n), None)
    ids = [n for n in ints if n != mask]
    if mask is None or len(ids) != 1:
        raise InputError("static steps: the model needs one 2-D int64 token input and an attention mask "
                         f"(its 2-D int64 inputs: {ints or 'none'})")
    return ids[0]

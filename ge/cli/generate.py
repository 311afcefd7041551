"""`ge generate MODEL --prompt "1,2,3;4,5" --max-new-tokens N`: tokens from a decoder step export (ge.generate),
the KV cache in place, greedy or sampled; prints each sequence and the tokens per second."""
from __future__ import annotations

import os

from ..errors import GEError
from .common import options_of


def _model(name: str):
    if os.path.exists(name):
        return name
    from .. import exports
    if name in exports.NAMES:
        return exports.load(name)
    raise GEError(f"model '{name}' is neither a file nor a committed export ({', '.join(exports.NAMES)})")


def _ints(text: str | None, what: str) -> list[int]:
    try:
        return [int(t) for t in text.replace(" ", "").split(",") if t] if text else []
    except ValueError:
        raise GEError(f"--{what} takes integers separated by ',', got {text!r}") from None


def cmd_generate(args) -> int:
    from ..generation import generate
    if not args.model:
        raise GEError("ge generate needs a decoder step export (a file, or e.g. gpt2_tiny_step)")
    prompts = [_ints(p, "prompt") for p in (args.prompt or "0").split(";")]
    out = generate(_model(args.model), prompts, args.max_new_tokens, do_sample=args.sample or None,
                   temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed,
                   stop_tokens=_ints(args.stop, "stop"), pad_token_id=args.pad, max_len=args.max_len,
                   runtime=args.runtime, options=options_of(args),
                   one_token_steps=args.one_token_steps, static_steps=args.static_steps)
    for b, (toks, new) in enumerate(zip(out.tokens, out.new_tokens)):
        prompt = toks[:len(toks) - len(new)]
        print(f"sequence {b}: {' '.join(map(str, prompt))} | {' '.join(map(str, new))}")
    if out.fallback:
        print(f"steps shaped by their past (runtime_v2): no static step plan for this export: {out.fallback}")
    n = sum(map(len, out.new_tokens))
    prompt = f"prompt {out.prompt_seconds * 1e3:.1f} ms in {out.prompt_steps} step{'s' if out.prompt_steps > 1 else ''}"
    print(f"generated {n} tokens in {out.steps} steps, {out.seconds:.3f} s ({prompt}): "
          f"{out.tokens_per_second:.1f} tokens/s")
    return 0

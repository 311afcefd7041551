"""ge.KVCache: a decoder's past keys/values kept in place between steps (docs/kv-cache.md).

    sess = ge.Session(model, options=ge.Options(kv_cache_max_len=256))
    cache = ge.KVCache(sess, batch=1)
    logits, = sess.run(None, {"input_ids": ids, "attention_mask": mask}, kv_cache=cache)   # cache.length += new

One buffer per past input, [batch, heads, max_len, head], 32-byte aligned and writable, so runtime_v2 reads
and writes it in place (its zero-copy feed rule): a step writes only its new rows (ge::CachedAttention) and
the past never moves. `present(name)` is the export's present output as a view of the rows written.
"""
from __future__ import annotations

import numpy as np

from .errors import InputError
from .kv_cache import check_feeds, layout
from .plan import aligned_empty


class KVCache:
    def __init__(self, session, batch: int = 1):
        lay = layout(session.plan) if getattr(session, "plan", None) is not None else None
        if lay is None or not lay["caches"]:
            raise InputError("KVCache needs a session compiled with Options(kv_cache_max_len=N) from a decoder "
                             "step export (past_key_values inputs)")
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
            raise InputError(f"KVCache batch must be a positive integer, got {batch!r}")
        self.layout, self.batch, self.max_len, self.length = lay, int(batch), lay["max_len"], 0
        self.arrays = {}
        self._mask = self._past = None   # kv_cache_static: the mask padded to max_len, the past length
        if lay["past"]:
            self._mask = aligned_empty((self.batch, self.max_len), np.int64)
            self._mask[...] = 0
            self._past = aligned_empty((1,), np.int64)
        for name, (heads, head) in lay["caches"].items():
            a = aligned_empty((self.batch, heads, self.max_len, head), lay["dtype"])
            a[...] = 0
            self.arrays[name] = a

    def reset(self) -> None:
        """Forget the tokens held (the rows are overwritten by the next steps)."""
        self.length = 0

    def present(self, name: str) -> np.ndarray:
        """The export's `present` for past input `name`: the first `length` rows, a view."""
        return self.arrays[name][:, :, :self.length]

    def feeds(self, feeds: dict) -> tuple[dict, int]:
        """The step's feeds with the caches added; (feeds, new tokens). InputError naming what does not fit."""
        clash = sorted(set(feeds) & (set(self.arrays) | {self.layout["past"]}))
        if clash:
            raise InputError(f"input '{clash[0]}' is the KV cache's: give kv_cache= or the array, not both")
        new = check_feeds(self.layout, feeds, self.length)
        b = np.shape(feeds[self.layout["ids"]])[0]
        if b != self.batch:
            raise InputError(f"input '{self.layout['ids']}' has batch {b}; the KV cache was made for {self.batch}")
        for name, a in self.arrays.items():
            if a.dtype != self.layout["dtype"] or a.shape[0] != self.batch or not a.flags.writeable:
                raise InputError(f"input '{name}': the KV cache's array is {a.dtype}{list(a.shape)}, "
                                 f"expected a writable {self.layout['dtype']} [{self.batch}, ...]")
        if self._past is None:
            return {**feeds, **self.arrays}, new
        total = self.length + new   # kv_cache_static: the plan's fixed shapes, the past length a value
        self._mask[:, :total] = feeds[self.layout["mask"]]
        self._mask[:, total:] = 0
        self._past[0] = self.length
        return {**feeds, self.layout["mask"]: self._mask, self.layout["past"]: self._past, **self.arrays}, new

    def advance(self, new: int) -> None:
        self.length += new

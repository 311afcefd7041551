"""Real transformers exports committed with the repo, for tests and benchmarks (tests/fixtures/transformers).

`tools/make_transformer_fixtures.py` made them in a dev venv: transformers' `BertModel` and `GPT2LMHeadModel`
from configs, random weights, `torch.onnx.export` with `dynamic_axes` on batch and sequence (opset 17), GPT-2
also as a decoder step with past key/values. The big models' float weights are stored without data (the file
would be tens of MB): `load(name)` draws them again, seeded, with each original's mean and standard deviation
(metadata "ge.stripped"). The tiny models keep their weights and carry PyTorch eager's outputs (`reference`).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "transformers"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.onnx"))


def path(name: str) -> str:
    p = FIXTURES / f"{name}.onnx"
    if not p.exists():
        raise FileNotFoundError(f"no transformers export '{name}' in {FIXTURES} (there are: {', '.join(NAMES)})")
    return str(p)


def load(name: str, seed: int = 0) -> onnx.ModelProto:
    """The export `name` with every stripped weight drawn again (normal, its original mean and std, seeded)."""
    model = onnx.load(path(name))
    meta = {p.key: p.value for p in model.metadata_props}
    stripped = json.loads(meta.get("ge.stripped", "{}"))
    rng = np.random.default_rng(seed)
    for t in model.graph.initializer:
        if t.name in stripped:
            mean, std = stripped[t.name]
            w = rng.standard_normal(tuple(t.dims), dtype=np.float32)
            w *= np.float32(std)
            w += np.float32(mean)
            t.CopyFrom(numpy_helper.from_array(w, t.name))
    return model


def reference(name: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(feeds, PyTorch eager's outputs) saved with a tiny export."""
    with np.load(FIXTURES / f"{name}.npz") as z:
        return ({k[3:]: z[k] for k in z.files if k.startswith("in/")},
                {k[4:]: z[k] for k in z.files if k.startswith("out/")})


def bert_feeds(batch: int, seq: int, vocab: int = 30522, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"input_ids": rng.integers(0, vocab, (batch, seq), dtype=np.int64),
            "attention_mask": np.ones((batch, seq), np.int64),
            "token_type_ids": np.zeros((batch, seq), np.int64)}


def gpt2_feeds(batch: int, seq: int, vocab: int = 50257, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"input_ids": rng.integers(0, vocab, (batch, seq), dtype=np.int64),
            "attention_mask": np.ones((batch, seq), np.int64)}


def gpt2_step_feeds(layers: int, heads: int, head_size: int, past: int, batch: int = 1, seq: int = 1,
                    vocab: int = 50257, seed: int = 0) -> dict[str, np.ndarray]:
    """A decoder step's feeds: new tokens, the mask over past + new, and random past keys/values."""
    rng = np.random.default_rng(seed)
    feeds = {"input_ids": rng.integers(0, vocab, (batch, seq), dtype=np.int64),
             "attention_mask": np.ones((batch, past + seq), np.int64)}
    for i in range(layers):
        for kv in ("key", "value"):
            feeds[f"past_key_values.{i}.{kv}"] = rng.standard_normal((batch, heads, past, head_size), np.float32)
    return feeds

"""Export transformers models to ONNX as users do, for tests and benchmarks (run by hand in a venv with torch and
transformers; not part of the suite):

    pip install torch==2.13.0 transformers onnx onnxscript
    python tools/make_transformer_fixtures.py [--out tests/fixtures/transformers] [NAME ...]

Each model is built from a config with random weights (seed 0) and exported the usual way: `torch.onnx.export`
with `dynamic_axes` on batch and sequence (the TorchScript exporter, opset 17), or `dynamo=True` where the name
says so. Weights of the big models would be tens of MB, so every float initializer of more than STRIP elements
is stored without its data: `ge.models.transformer_export(name)` draws it again (seeded normal with the
original's mean and standard deviation, kept in the model's metadata under "ge.stripped"). The tiny models keep
their weights. Also writes NAME.npz: seeded feeds ("in/<input>") and PyTorch eager's outputs ("out/<output>")
for the models that keep their weights.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

STRIP = 4096
OPSET = 17


def bert(layers, hidden, heads, vocab=30522, attn="sdpa"):
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=4 * hidden, max_position_embeddings=512, attn_implementation=attn)
    return BertModel(cfg).eval()


def gpt2(layers, hidden, heads, vocab=50257, attn="sdpa"):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=vocab, n_embd=hidden, n_layer=layers, n_head=heads, n_positions=1024,
                     attn_implementation=attn)
    return GPT2LMHeadModel(cfg).eval()


class BertIO(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return out.last_hidden_state, out.pooler_output


class GPT2IO(torch.nn.Module):
    """logits from input_ids and attention_mask, no cache."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


class GPT2Step(torch.nn.Module):
    """A decoder step: logits and present key/values from input_ids, attention_mask and past key/values."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, *past):
        from transformers import DynamicCache
        cache = DynamicCache()
        for i in range(len(past) // 2):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
        presents = []
        for layer in out.past_key_values.layers:
            presents += [layer.keys, layer.values]
        return (out.logits, *presents)


def bert_export(layers, hidden, heads, vocab=30522, attn="sdpa", seq=16):
    m = BertIO(bert(layers, hidden, heads, vocab, attn))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (2, seq), generator=g)
    mask = torch.ones(2, seq, dtype=torch.int64)
    mask[1, seq // 2:] = 0
    types = torch.zeros(2, seq, dtype=torch.int64)
    dyn = {0: "batch", 1: "sequence"}
    return m, (ids, mask, types), ["input_ids", "attention_mask", "token_type_ids"], \
        ["last_hidden_state", "pooler_output"], {"input_ids": dyn, "attention_mask": dyn, "token_type_ids": dyn,
                                                 "last_hidden_state": dyn, "pooler_output": {0: "batch"}}


def gpt2_export(layers, hidden, heads, vocab=50257, attn="sdpa", seq=16):
    m = GPT2IO(gpt2(layers, hidden, heads, vocab, attn))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (2, seq), generator=g)
    mask = torch.ones(2, seq, dtype=torch.int64)
    dyn = {0: "batch", 1: "sequence"}
    return m, (ids, mask), ["input_ids", "attention_mask"], ["logits"], \
        {"input_ids": dyn, "attention_mask": dyn, "logits": dyn}


def gpt2_step_export(layers, hidden, heads, vocab=50257, attn="sdpa", past=8, seq=1):
    m = GPT2Step(gpt2(layers, hidden, heads, vocab, attn))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (1, seq), generator=g)
    mask = torch.ones(1, past + seq, dtype=torch.int64)
    head = hidden // heads
    pasts = [torch.randn(1, heads, past, head, generator=g) for _ in range(2 * layers)]
    names = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    outs = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    dyn = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total_sequence"},
           "logits": {0: "batch", 1: "sequence"}}
    dyn.update({n: {0: "batch", 2: "past_sequence"} for n in names})
    dyn.update({n: {0: "batch", 2: "total_sequence"} for n in outs})
    return m, (ids, mask, *pasts), ["input_ids", "attention_mask", *names], ["logits", *outs], dyn


# name -> (builder, kwargs, dynamo, keep weights)
MODELS = {
    "bert_tiny": (bert_export, dict(layers=2, hidden=64, heads=4, vocab=100), False, True),
    "bert_tiny_eager": (bert_export, dict(layers=2, hidden=64, heads=4, vocab=100, attn="eager"), False, True),
    "bert_tiny_dynamo": (bert_export, dict(layers=2, hidden=64, heads=4, vocab=100), True, True),
    "gpt2_tiny": (gpt2_export, dict(layers=2, hidden=64, heads=4, vocab=100), False, True),
    "gpt2_tiny_step": (gpt2_step_export, dict(layers=2, hidden=64, heads=4, vocab=100), False, True),
    "bert_4x256": (bert_export, dict(layers=4, hidden=256, heads=4), False, False),
    "bert_6x768": (bert_export, dict(layers=6, hidden=768, heads=12), False, False),
    "gpt2_4x256": (gpt2_export, dict(layers=4, hidden=256, heads=4), False, False),
    "gpt2_4x256_step": (gpt2_step_export, dict(layers=4, hidden=256, heads=4), False, False),
    "gpt2_12x768_step": (gpt2_step_export, dict(layers=12, hidden=768, heads=12), False, False),
}


def strip(model: onnx.ModelProto) -> None:
    """Drop the data of big float initializers; their shape, mean and std go to metadata 'ge.stripped'."""
    stripped = {}
    for t in model.graph.initializer:
        if t.data_type != onnx.TensorProto.FLOAT or int(np.prod(t.dims)) <= STRIP:
            continue
        a = numpy_helper.to_array(t)
        stripped[t.name] = [float(a.mean()), float(a.std())]
        t.ClearField("raw_data")
        t.ClearField("float_data")
        t.raw_data = b""
    entry = model.metadata_props.add()
    entry.key, entry.value = "ge.stripped", json.dumps(stripped)


def export(name: str, out: str) -> None:
    build, kwargs, dynamo, keep = MODELS[name]
    torch.manual_seed(0)
    module, args, inputs, outputs, dyn = build(**kwargs)
    path = os.path.join(out, f"{name}.onnx")
    with torch.no_grad():
        ref = module(*args)  # before the export, which leaves the module's state changed
        if dynamo:
            shapes = {n: {a: torch.export.Dim(d, min=1, max=512) if d != "batch" else torch.export.Dim.AUTO
                          for a, d in dyn[n].items()} for n in inputs}
            prog = torch.onnx.export(module, args, input_names=inputs, output_names=outputs, dynamo=True,
                                     dynamic_shapes=tuple(shapes[n] for n in inputs), opset_version=18)
            prog.save(path)
        else:
            torch.onnx.export(module, args, path, input_names=inputs, output_names=outputs, dynamic_axes=dyn,
                              opset_version=OPSET, dynamo=False, do_constant_folding=True)
    model = onnx.load(path)
    if keep:
        ref = ref if isinstance(ref, tuple) else (ref,)
        np.savez_compressed(os.path.join(out, f"{name}.npz"),
                            **{f"in/{n}": a.numpy() for n, a in zip(inputs, args)},
                            **{f"out/{n}": r.numpy() for n, r in zip(outputs, ref)})
    else:
        strip(model)
    onnx.save(model, path)
    print(f"{name}: {len(model.graph.node)} nodes, {os.path.getsize(path) / 1e6:.2f} MB", file=sys.stderr)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join("tests", "fixtures", "transformers"))
    p.add_argument("names", nargs="*", default=list(MODELS))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.names:
        export(name, a.out)


if __name__ == "__main__":
    main()
